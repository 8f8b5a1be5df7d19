// <goro/goro.hpp>: the runtime and its goroutine-aware synchronisation.
#pragma once

#include "goro/runtime.hpp"
