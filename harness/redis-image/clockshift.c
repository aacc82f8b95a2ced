/*
 * clockshift: shift the wall clock of one process, at run time, by an offset
 * read from a file. An LD_PRELOAD library, built into locklab's Redis image
 * at /usr/lib/locklab/libclockshift.so by harness/redis-image/build.sh.
 *
 * Why not libfaketime: Debian's libfaketime (0.9.10) and Debian's
 * redis-server (linked to the system jemalloc) hang at start-up. jemalloc's
 * initialisation calls clock_gettime(), libfaketime initialises itself inside
 * that call, some of its dlsym() look-ups fail (__ftime, versioned
 * timer_settime), glibc mallocs the error message, which re-enters jemalloc's
 * unfinished initialisation, which calls clock_gettime() again: libfaketime
 * prints "Cannot recover from unexpected recursive calls to clock_gettime()"
 * and Redis never starts. This library does the one thing locklab needs and
 * never calls dlsym() or malloc().
 *
 * Semantics (an NTP step of the node's clock, nothing else):
 *   - CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI (clock_gettime),
 *     gettimeofday() and time() return real time + offset. Redis' TIME and
 *     key expiry (absolute unix milliseconds) follow this clock.
 *   - CLOCK_MONOTONIC and the other clocks are untouched, as on a real host
 *     whose wall clock is stepped.
 *   - The offset is read from the file named by LOCKLAB_CLOCK_FILE (default
 *     /tmp/locklab-clock-offset). Content: a signed integer with an optional
 *     unit, ns, us, ms (the default) or s, e.g. "-1500" or "+3600s". A missing
 *     or unreadable file means offset 0. The file is stat()ed on every call
 *     and re-read when its inode, size, mtime or ctime changes, so replacing
 *     it (docker cp, PUT /containers/{id}/archive) jumps the clock at once.
 *     (ctime matters: archive extraction may rewrite the file in place with
 *     the same size and a whole-second mtime taken from the tar header.)
 *
 * Usage:
 *   docker run -e LD_PRELOAD=/usr/lib/locklab/libclockshift.so \
 *              -e LOCKLAB_CLOCK_FILE=/tmp/locklab-clock-offset IMAGE ...
 *   printf '+10s' > off && docker cp off CONTAINER:/tmp/locklab-clock-offset
 *
 * Build: cc -O2 -shared -fPIC -o libclockshift.so clockshift.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_FILE "/tmp/locklab-clock-offset"
#define NS_PER_SEC 1000000000LL

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int cache_valid;
static dev_t cache_dev;
static ino_t cache_ino;
static off_t cache_size;
static struct timespec cache_mtime;
static struct timespec cache_ctime;
static int64_t cache_offset_ns;

static int real_clock_gettime(clockid_t clk, struct timespec *ts) {
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static const char *offset_file(void) {
    const char *p = getenv("LOCKLAB_CLOCK_FILE");
    return (p && *p) ? p : DEFAULT_FILE;
}

static int64_t parse_offset(const char *s) {
    int neg = 0;
    int64_t v = 0;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    if (*s == '+') s++;
    else if (*s == '-') { neg = 1; s++; }
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9') {
        if (v > INT64_MAX / 10 - 10) return 0;
        v = v * 10 + (*s - '0');
        s++;
    }
    int64_t mult = 1000000LL; /* ms */
    if (s[0] == 'n' && s[1] == 's') mult = 1;
    else if (s[0] == 'u' && s[1] == 's') mult = 1000LL;
    else if (s[0] == 'm' && s[1] == 's') mult = 1000000LL;
    else if (s[0] == 's') mult = NS_PER_SEC;
    if (v > INT64_MAX / mult) return 0;
    v *= mult;
    return neg ? -v : v;
}

static int64_t current_offset_ns(void) {
    struct stat st;
    int64_t off;
    if (stat(offset_file(), &st) != 0) {
        pthread_mutex_lock(&lock);
        cache_valid = 0;
        cache_offset_ns = 0;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    pthread_mutex_lock(&lock);
    if (cache_valid && cache_dev == st.st_dev && cache_ino == st.st_ino &&
        cache_size == st.st_size && cache_mtime.tv_sec == st.st_mtim.tv_sec &&
        cache_mtime.tv_nsec == st.st_mtim.tv_nsec && cache_ctime.tv_sec == st.st_ctim.tv_sec &&
        cache_ctime.tv_nsec == st.st_ctim.tv_nsec) {
        off = cache_offset_ns;
        pthread_mutex_unlock(&lock);
        return off;
    }
    char buf[64];
    ssize_t n = -1;
    int fd = open(offset_file(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
    }
    off = 0;
    if (n > 0) {
        buf[n] = '\0';
        off = parse_offset(buf);
    }
    cache_valid = 1;
    cache_dev = st.st_dev;
    cache_ino = st.st_ino;
    cache_size = st.st_size;
    cache_mtime = st.st_mtim;
    cache_ctime = st.st_ctim;
    cache_offset_ns = off;
    pthread_mutex_unlock(&lock);
    return off;
}

static void shift(struct timespec *ts, int64_t off) {
    int64_t ns = (int64_t)ts->tv_nsec + off % NS_PER_SEC;
    int64_t sec = (int64_t)ts->tv_sec + off / NS_PER_SEC;
    if (ns < 0) { ns += NS_PER_SEC; sec -= 1; }
    else if (ns >= NS_PER_SEC) { ns -= NS_PER_SEC; sec += 1; }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)ns;
}

static int is_wall_clock(clockid_t clk) {
    return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_TAI;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = real_clock_gettime(clk, ts);
    if (r == 0 && is_wall_clock(clk)) shift(ts, current_offset_ns());
    return r;
}

/* glibc declares tv nonnull; callers that pass NULL anyway get no crash here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    shift(&ts, current_offset_ns());
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    if (tz) memset(tz, 0, sizeof(struct timezone));
    return 0;
}
#pragma GCC diagnostic pop

time_t time(time_t *t) {
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    shift(&ts, current_offset_ns());
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
