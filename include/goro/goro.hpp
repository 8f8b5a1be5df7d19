// <goro/goro.hpp>: the runtime and its goroutine-aware synchronisation.
#pragma once

#include "goro/chan.hpp"
#include "goro/context.hpp"
#include "goro/runtime.hpp"
#include "goro/select.hpp"
#include "goro/sync.hpp"
#include "goro/time.hpp"
