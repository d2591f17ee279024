/* Preloaded before libfaketime by the kill trials' --clock mode (tests/helpers/killtrials.py).
 *
 * libfaketime 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC=1 rewrites the absolute
 * deadline of clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) as if it were a
 * faked wall-clock time, and the kernel answers EINVAL: every time.sleep() in
 * Python fails. The monotonic clock is left real in that mode, so the deadline
 * the caller computed is already right: hand it to the kernel untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
    long r = syscall(SYS_clock_nanosleep, clock, flags, req, rem);
    return r == -1 ? errno : 0;
}
