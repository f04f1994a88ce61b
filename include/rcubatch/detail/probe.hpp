// rcubatch/detail/probe.hpp — static tracing probes (USDT, provider `rcubatch`), a no-op until a tool attaches.
//
//   RCUBATCH_PROBE(batch_start, batch_id, objects);   // rcubatch:batch_start with two arguments
//
// A probe is a `nop` instruction plus an ELF note (.note.stapsdt) naming the provider, the probe
// and where its arguments are (registers or stack slots); perf, bpftrace and SystemTap read the
// note and plant a breakpoint only while they trace. Untraced, a probe site costs its nop and
// keeps its arguments live in registers at that point — so every site passes values the code
// computed anyway (docs/observability.md lists the probes, their arguments and the measured cost).
// We use <sys/sdt.h> (Debian's systemtap-sdt-dev; the format every tracer reads) rather than
// writing the note ourselves.
//
// Compiled in when <sys/sdt.h> is found and RCUBATCH_PROBES is not 0 (the CMake option
// RCUBATCH_PROBES, ON by default, sets it for rcubatch::core's consumers); otherwise every probe
// compiles to nothing and its arguments are not evaluated.
// Arguments must be integers or pointers (at most 8 bytes each), 1 to 6 of them: the sites pass
// durations as nanosecond counts and names as `const char*` to NUL-terminated text.
#pragma once

#if !defined(RCUBATCH_PROBES)
#define RCUBATCH_PROBES 1
#endif

#if RCUBATCH_PROBES && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define RCUBATCH_HAS_PROBES 1
#endif
#endif

#if defined(RCUBATCH_HAS_PROBES)
// Dispatch on the argument count to STAP_PROBE1..6 (STAP_PROBEV needs SDT_USE_VARIADIC defined
// before <sys/sdt.h>, which a program may already have included without it).
#define RCUBATCH_PROBE_NARG_(...) RCUBATCH_PROBE_NARG_I_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define RCUBATCH_PROBE_NARG_I_(a1, a2, a3, a4, a5, a6, n, ...) n
#define RCUBATCH_PROBE_CAT_(a, b) a##b
#define RCUBATCH_PROBE_N_(n) RCUBATCH_PROBE_CAT_(STAP_PROBE, n)
/// Fires probe rcubatch:<name> with 1 to 6 integer or pointer arguments.
#define RCUBATCH_PROBE(name, ...) RCUBATCH_PROBE_N_(RCUBATCH_PROBE_NARG_(__VA_ARGS__))(rcubatch, name, __VA_ARGS__)
#else
#define RCUBATCH_PROBE(name, ...) static_cast<void>(0)
#endif
