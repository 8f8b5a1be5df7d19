// struct stat and dirent types as goro::fs::FileInfo / FileType. Internal.
#pragma once

#include <sys/stat.h>

#include "goro/fs.hpp"

namespace goro::fs::detail {

FileType file_type_from_mode(mode_t mode) noexcept;
FileInfo file_info_from_stat(const struct stat& st) noexcept;

}  // namespace goro::fs::detail
