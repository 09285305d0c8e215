/*
 * libnvidia-ml.so.1 of the NVML SIMULATOR -- not NVIDIA's library.
 *
 * Compiled against NVIDIA's own nvml.h (Debian's libnvidia-ml-dev), so the
 * structures, enums, versioned names and return codes are NVIDIA's.  Every
 * call is answered by the project's NVML simulator (nvml_sim/src/nvmlsim):
 * the first nvmlInit of a process starts `python3 -m nvmlsim.libserver`
 * with a socket as its stdin and stdout, each call is one request line, and
 * the last nvmlShutdown ends it.  The simulator reads the node's state file
 * afresh for every call, so an `nvmlsim` command is seen by every client at
 * its next call.  The wire format is in nvmlsim/libserver.py.
 *
 * Environment: NVMLSIM_PYTHON (the Python that runs the server, default
 * python3 on PATH), NVMLSIM_PYTHONPATH (put first on the server's
 * PYTHONPATH), NVMLSIM_DEBUG=1 (log failures and every entry point that is
 * exported but not simulated), and the simulator's own NVMLSIM_STATE and
 * NVMLSIM_ROOT.
 *
 * Entry points that NVIDIA's library exports but the simulator does not
 * implement are generated stubs (stubs.c, from the exported-symbol list of a
 * real libnvidia-ml.so.1): they answer NVML_ERROR_NOT_SUPPORTED.  A name
 * the real library does not export is not here either: a client's dlsym
 * fails as it would (nvidia-ml-py: NVMLError_FunctionNotFound).
 */
#define _GNU_SOURCE
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_FIELDS 512
#define KEY_SIZE 112

extern char **environ;

/* ------------------------------------------------------------------ state */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int refcount;
static int sock = -1;
static pid_t server = -1;

static int debug_enabled(void)
{
    const char *on = getenv("NVMLSIM_DEBUG");
    return on && *on && strcmp(on, "0") != 0;
}

void nvmlsim_debug(const char *fmt, ...)
{
    va_list ap;
    if (!debug_enabled())
        return;
    fputs("nvmlsim: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Handles: one interned object per simulator key, so the same device always
 * has the same pointer (as with the real library) and a pointer that is not
 * ours is INVALID_ARGUMENT. */
enum kind { DEVICE, GPU_INSTANCE, COMPUTE_INSTANCE };
struct handle {
    char key[KEY_SIZE];
    enum kind kind;
    struct handle *next;
};
struct nvmlDevice_st { struct handle h; };
struct nvmlGpuInstance_st { struct handle h; };
struct nvmlComputeInstance_st { struct handle h; };

static struct handle *handles;

static struct handle *intern(enum kind kind, const char *key)
{
    struct handle *h;
    for (h = handles; h; h = h->next)
        if (h->kind == kind && strcmp(h->key, key) == 0)
            return h;
    h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    snprintf(h->key, sizeof(h->key), "%s", key);
    h->kind = kind;
    h->next = handles;
    handles = h;
    return h;
}

static int known(const void *ptr, enum kind kind)
{
    const struct handle *h;
    for (h = handles; h; h = h->next)
        if ((const void *)h == ptr && h->kind == kind)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ the server */

static nvmlReturn_t start_server(void)
{
    int pair[2];
    posix_spawn_file_actions_t actions;
    const char *python = getenv("NVMLSIM_PYTHON");
    const char *extra = getenv("NVMLSIM_PYTHONPATH");
    const char *path = getenv("PYTHONPATH");
    char *argv[4];
    char **envp;
    char *pythonpath = NULL;
    size_t n = 0, i, j = 0;
    int rc;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return NVML_ERROR_UNKNOWN;
    argv[0] = (char *)(python && *python ? python : "python3");
    argv[1] = "-m";
    argv[2] = "nvmlsim.libserver";
    argv[3] = NULL;
    while (environ[n])
        n++;
    envp = calloc(n + 2, sizeof(char *));
    if (!envp) {
        close(pair[0]);
        close(pair[1]);
        return NVML_ERROR_MEMORY;
    }
    for (i = 0; i < n; i++)
        if (!(extra && *extra && strncmp(environ[i], "PYTHONPATH=", 11) == 0))
            envp[j++] = environ[i];
    if (extra && *extra) {
        size_t len = strlen(extra) + (path ? strlen(path) : 0) + 16;
        pythonpath = malloc(len);
        if (pythonpath) {
            snprintf(pythonpath, len, "PYTHONPATH=%s%s%s", extra, path && *path ? ":" : "", path && *path ? path : "");
            envp[j++] = pythonpath;
        }
    }
    envp[j] = NULL;
    /* The server holds nothing of its caller's but the socket: the real library starts no process, and a
     * server that kept an inherited descriptor open (slurmstepd's pipe to a job's output, say) would keep
     * that open after the caller closed it (slurmstepd then waits 60 s: "Abandoning IO 60 secs after job
     * shutdown initiated"). Its stderr is the caller's only with NVMLSIM_DEBUG, /dev/null otherwise. */
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pair[1], 0);
    posix_spawn_file_actions_adddup2(&actions, pair[1], 1);
    if (!debug_enabled())
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    rc = posix_spawnp(&server, argv[0], &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    free(pythonpath);
    free(envp);
    close(pair[1]);
    if (rc != 0) {
        nvmlsim_debug("cannot start %s -m nvmlsim.libserver: %s", argv[0], strerror(rc));
        close(pair[0]);
        server = -1;
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    sock = pair[0];
    return NVML_SUCCESS;
}

static void stop_server(void)
{
    if (sock >= 0)
        close(sock);
    sock = -1;
    if (server > 0) {
        int status;
        while (waitpid(server, &status, 0) < 0 && errno == EINTR)
            ;
    }
    server = -1;
}

/* A request being built: "NAME\targ\targ". */
struct req {
    char buf[2048];
    size_t n;
};

/* An answer: rc and its fields (unescaped, in line). */
struct reply {
    char *line;
    char *f[MAX_FIELDS];
    int n;
};

static void req_raw(struct req *q, const char *text)
{
    size_t len = strlen(text);
    if (q->n + len + 1 < sizeof(q->buf)) {
        memcpy(q->buf + q->n, text, len);
        q->n += len;
        q->buf[q->n] = 0;
    }
}

static void req_init(struct req *q, const char *name)
{
    q->n = 0;
    q->buf[0] = 0;
    req_raw(q, name);
}

static void req_str(struct req *q, const char *s)
{
    char c[3] = {0};
    req_raw(q, "\t");
    for (; *s; s++) {
        if (*s == '\\' || *s == '\t' || *s == '\n') {
            c[0] = '\\';
            c[1] = *s == '\t' ? 't' : *s == '\n' ? 'n' : '\\';
        } else {
            c[0] = *s;
            c[1] = 0;
        }
        req_raw(q, c);
    }
}

static void req_uint(struct req *q, unsigned long long v)
{
    char num[32];
    snprintf(num, sizeof(num), "\t%llu", v);
    req_raw(q, num);
}

static void unescape(char *s)
{
    char *out = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *out++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
        } else {
            *out++ = *s;
        }
    }
    *out = 0;
}

static nvmlReturn_t transact(struct req *q, struct reply *r)
{
    size_t size = 4096, len = 0;
    char *line;
    char *p;
    nvmlReturn_t rc;

    r->line = NULL;
    r->n = 0;
    req_raw(q, "\n");
    for (size_t sent = 0; sent < q->n;) {
        ssize_t w = send(sock, q->buf + sent, q->n - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            nvmlsim_debug("the simulator server is gone (send: %s)", strerror(errno));
            return NVML_ERROR_UNKNOWN;
        }
        sent += (size_t)w;
    }
    line = malloc(size);
    if (!line)
        return NVML_ERROR_MEMORY;
    for (;;) {
        ssize_t got;
        if (len + 1 >= size) {
            char *bigger = realloc(line, size * 2);
            if (!bigger) {
                free(line);
                return NVML_ERROR_MEMORY;
            }
            line = bigger;
            size *= 2;
        }
        got = recv(sock, line + len, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            nvmlsim_debug("the simulator server is gone (recv: %s)", got == 0 ? "end of stream" : strerror(errno));
            free(line);
            return NVML_ERROR_UNKNOWN;
        }
        if (line[len] == '\n')
            break;
        len++;
    }
    line[len] = 0;
    r->line = line;
    p = line;
    rc = (nvmlReturn_t)strtol(p, &p, 10);
    while (*p == '\t' && r->n < MAX_FIELDS) {
        *p++ = 0;
        r->f[r->n++] = p;
        while (*p && *p != '\t')
            p++;
    }
    for (int i = 0; i < r->n; i++)
        unescape(r->f[i]);
    return rc;
}

static void reply_free(struct reply *r)
{
    free(r->line);
    r->line = NULL;
}

/* One call: the request is sent under the lock; UNINITIALIZED before nvmlInit. */
static nvmlReturn_t call(struct req *q, struct reply *r)
{
    nvmlReturn_t rc;
    pthread_mutex_lock(&lock);
    if (refcount <= 0 || sock < 0) {
        pthread_mutex_unlock(&lock);
        r->line = NULL;
        r->n = 0;
        return NVML_ERROR_UNINITIALIZED;
    }
    rc = transact(q, r);
    pthread_mutex_unlock(&lock);
    if (rc != NVML_SUCCESS) {
        nvmlsim_debug("%.*s: %s", (int)strcspn(q->buf, "\t\n"), q->buf, nvmlErrorString(rc));
        reply_free(r);
    }
    return rc;
}

static unsigned long long u(const struct reply *r, int i)
{
    return i < r->n ? strtoull(r->f[i], NULL, 10) : 0;
}

static nvmlReturn_t text_out(const struct reply *r, int i, char *out, unsigned int length)
{
    const char *s = i < r->n ? r->f[i] : "";
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

static void *handle_out(const struct reply *r, int i)
{
    const char *key = i < r->n ? r->f[i] : "";
    enum kind kind = strncmp(key, "gi|", 3) == 0 ? GPU_INSTANCE : strncmp(key, "ci|", 3) == 0 ? COMPUTE_INSTANCE : DEVICE;
    return intern(kind, key);
}

/* A request for NAME with a handle first. */
#define REQ_H(q, name, hp, kind)                                      \
    do {                                                              \
        if (refcount <= 0)                                            \
            return NVML_ERROR_UNINITIALIZED;                          \
        if (!known((hp), (kind)))                                     \
            return NVML_ERROR_INVALID_ARGUMENT;                       \
        req_init((q), (name));                                        \
        req_str((q), ((const struct handle *)(const void *)(hp))->key); \
    } while (0)

/* Sends NAME for the handle HP with up to two unsigned arguments and leaves the answer in *r.
 * OUT is the caller's output pointer: NULL is INVALID_ARGUMENT (UNINITIALIZED before nvmlInit). */
static nvmlReturn_t fetch(struct reply *r, const char *name, const void *hp, enum kind kind, const void *out, int nargs,
                          unsigned long long a0, unsigned long long a1)
{
    struct req q;
    r->line = NULL;
    r->n = 0;
    if (!out)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    REQ_H(&q, name, hp, kind);
    if (nargs > 0)
        req_uint(&q, a0);
    if (nargs > 1)
        req_uint(&q, a1);
    return call(&q, r);
}

/* Structures filled from an answer: one descriptor per field, in the order the server sends them. */
enum ftype { F_U32, F_U64, F_STR, F_DEVICE, F_GPU_INSTANCE };
struct field {
    enum ftype type;
    size_t offset;
    size_t size;   /* F_STR: the buffer's size */
};
#define FU(T, m) {F_U32, offsetof(T, m), 0}
#define FL(T, m) {F_U64, offsetof(T, m), 0}
#define FS(T, m) {F_STR, offsetof(T, m), sizeof(((T *)0)->m)}
#define FD(T, m) {F_DEVICE, offsetof(T, m), 0}
#define FG(T, m) {F_GPU_INSTANCE, offsetof(T, m), 0}
#define NFIELDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void fill(void *dst, const struct field *f, int n, const struct reply *r)
{
    char *base = dst;
    for (int i = 0; i < n; i++) {
        switch (f[i].type) {
        case F_U32: *(unsigned int *)(base + f[i].offset) = (unsigned int)u(r, i); break;
        case F_U64: *(unsigned long long *)(base + f[i].offset) = u(r, i); break;
        case F_STR: snprintf(base + f[i].offset, f[i].size, "%s", i < r->n ? r->f[i] : ""); break;
        case F_DEVICE: *(nvmlDevice_t *)(base + f[i].offset) = handle_out(r, i); break;
        case F_GPU_INSTANCE: *(nvmlGpuInstance_t *)(base + f[i].offset) = handle_out(r, i); break;
        }
    }
}

/* NAME for the handle HP (up to two unsigned arguments), its answer filled into *DST by the descriptors. */
static nvmlReturn_t struct_call(const char *name, const void *hp, enum kind kind, int nargs, unsigned long long a0,
                                unsigned long long a1, void *dst, const struct field *f, int n)
{
    struct reply r;
    nvmlReturn_t rc = fetch(&r, name, hp, kind, dst, nargs, a0, a1);
    if (rc != NVML_SUCCESS)
        return rc;
    fill(dst, f, n, &r);
    reply_free(&r);
    return NVML_SUCCESS;
}

#define VERSIONED(info, want) \
    do { if ((info) && (info)->version != (want)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH; } while (0)

static const struct field pci_fields[] = {
    FS(nvmlPciInfo_t, busIdLegacy), FU(nvmlPciInfo_t, domain), FU(nvmlPciInfo_t, bus), FU(nvmlPciInfo_t, device),
    FU(nvmlPciInfo_t, pciDeviceId), FU(nvmlPciInfo_t, pciSubSystemId), FS(nvmlPciInfo_t, busId)};
static const struct field memory_v2_fields[] = {
    FL(nvmlMemory_v2_t, total), FL(nvmlMemory_v2_t, reserved), FL(nvmlMemory_v2_t, free), FL(nvmlMemory_v2_t, used)};
static const struct field attribute_fields[] = {
    FU(nvmlDeviceAttributes_t, multiprocessorCount), FU(nvmlDeviceAttributes_t, sharedCopyEngineCount),
    FU(nvmlDeviceAttributes_t, sharedDecoderCount), FU(nvmlDeviceAttributes_t, sharedEncoderCount),
    FU(nvmlDeviceAttributes_t, sharedJpegCount), FU(nvmlDeviceAttributes_t, sharedOfaCount),
    FU(nvmlDeviceAttributes_t, gpuInstanceSliceCount), FU(nvmlDeviceAttributes_t, computeInstanceSliceCount),
    FL(nvmlDeviceAttributes_t, memorySizeMB)};
#define GI_PROFILE_FIELDS(T) \
    FU(T, id), FU(T, isP2pSupported), FU(T, sliceCount), FU(T, instanceCount), FU(T, multiprocessorCount), \
    FU(T, copyEngineCount), FU(T, decoderCount), FU(T, encoderCount), FU(T, jpegCount), FU(T, ofaCount), FL(T, memorySizeMB)
static const struct field gi_profile_fields[] = {GI_PROFILE_FIELDS(nvmlGpuInstanceProfileInfo_t)};
static const struct field gi_profile_v2_fields[] = {GI_PROFILE_FIELDS(nvmlGpuInstanceProfileInfo_v2_t),
                                                   FS(nvmlGpuInstanceProfileInfo_v2_t, name)};
#define CI_PROFILE_FIELDS(T) \
    FU(T, id), FU(T, sliceCount), FU(T, instanceCount), FU(T, multiprocessorCount), FU(T, sharedCopyEngineCount), \
    FU(T, sharedDecoderCount), FU(T, sharedEncoderCount), FU(T, sharedJpegCount), FU(T, sharedOfaCount)
static const struct field ci_profile_fields[] = {CI_PROFILE_FIELDS(nvmlComputeInstanceProfileInfo_t)};
static const struct field ci_profile_v2_fields[] = {CI_PROFILE_FIELDS(nvmlComputeInstanceProfileInfo_v2_t),
                                                   FS(nvmlComputeInstanceProfileInfo_v2_t, name)};
static const struct field gi_info_fields[] = {
    FD(nvmlGpuInstanceInfo_t, device), FU(nvmlGpuInstanceInfo_t, id), FU(nvmlGpuInstanceInfo_t, profileId),
    FU(nvmlGpuInstanceInfo_t, placement.start), FU(nvmlGpuInstanceInfo_t, placement.size)};
static const struct field ci_info_fields[] = {
    FD(nvmlComputeInstanceInfo_t, device), FG(nvmlComputeInstanceInfo_t, gpuInstance), FU(nvmlComputeInstanceInfo_t, id),
    FU(nvmlComputeInstanceInfo_t, profileId), FU(nvmlComputeInstanceInfo_t, placement.start),
    FU(nvmlComputeInstanceInfo_t, placement.size)};

/* ------------------------------------------------------------------ init, errors */

static const char *const error_strings[] = {
    /* what the real libnvidia-ml.so.1 of driver 580.159.04 returned (nvml_sim/tests/data/real-h200-580.159.04) */
    "Success", "Uninitialized", "Invalid Argument", "Not Supported", "Insufficient Permissions",
    "Already Initialized", "Not Found", "Insufficient Size", "Insufficient External Power", "Driver Not Loaded",
    "Timeout", "Interrupt Request Issue", "NVML Shared Library Not Found", "Function Not Found",
    "Corrupted infoROM", "GPU is lost", "GPU requires reset", "GPU access blocked by the operating system",
    "Driver/library version mismatch", "In use by another client", "Insufficient Memory", "No data",
    "vGPU ECC not supported", "Insufficient Resources", "Invalid Frequency", "Argument version mismatch",
    "Requested functionality has been deprecated", "System is not in ready state", "No supported GPUs were found",
    "Resource not in correct state to perform requested operation", "Reset type is not supported for given device",
};

EXPORT const char *DECLDIR nvmlErrorString(nvmlReturn_t result)
{
    if ((unsigned)result < sizeof(error_strings) / sizeof(error_strings[0]))
        return error_strings[result];
    return "Unknown Error";
}

EXPORT nvmlReturn_t DECLDIR nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    (void)flags;
    pthread_mutex_lock(&lock);
    if (refcount == 0) {
        struct req q;
        struct reply r;
        rc = start_server();
        if (rc == NVML_SUCCESS) {
            refcount = 1;   /* for transact's sake; undone on failure */
            req_init(&q, "nvmlInit");
            rc = transact(&q, &r);
            reply_free(&r);
            refcount = 0;
            if (rc != NVML_SUCCESS)
                stop_server();
        }
    }
    if (rc == NVML_SUCCESS)
        refcount++;
    pthread_mutex_unlock(&lock);
    if (rc != NVML_SUCCESS)
        nvmlsim_debug("nvmlInit: %s", nvmlErrorString(rc));
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
EXPORT nvmlReturn_t DECLDIR nvmlInit(void) { return nvmlInitWithFlags(0); }

EXPORT nvmlReturn_t DECLDIR nvmlShutdown(void)
{
    pthread_mutex_lock(&lock);
    if (refcount <= 0) {
        pthread_mutex_unlock(&lock);
        return NVML_ERROR_UNINITIALIZED;
    }
    if (--refcount == 0) {
        struct req q;
        struct reply r;
        refcount = 1;
        req_init(&q, "nvmlShutdown");
        transact(&q, &r);
        reply_free(&r);
        refcount = 0;
        stop_server();
    }
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ system */

static nvmlReturn_t system_text(const char *name, char *out, unsigned int length)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    req_init(&q, name);
    if ((rc = call(&q, &r)) != NVML_SUCCESS)
        return rc;
    rc = text_out(&r, 0, out, length);
    reply_free(&r);
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    return system_text("nvmlSystemGetDriverVersion", version, length);
}

EXPORT nvmlReturn_t DECLDIR nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return system_text("nvmlSystemGetNVMLVersion", version, length);
}

EXPORT nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    if (!cudaDriverVersion)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    req_init(&q, "nvmlSystemGetCudaDriverVersion");
    if ((rc = call(&q, &r)) != NVML_SUCCESS)
        return rc;
    *cudaDriverVersion = (int)u(&r, 0);
    reply_free(&r);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

EXPORT nvmlReturn_t DECLDIR nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    req_init(&q, "nvmlSystemGetProcessName");
    req_uint(&q, pid);
    if ((rc = call(&q, &r)) != NVML_SUCCESS)
        return rc;
    rc = text_out(&r, 0, name, length);
    reply_free(&r);
    return rc;
}

/* ------------------------------------------------------------------ device lookup */

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    if (refcount <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    req_init(&q, "nvmlDeviceGetCount");
    if ((rc = call(&q, &r)) != NVML_SUCCESS)
        return rc;
    *deviceCount = (unsigned int)u(&r, 0);
    reply_free(&r);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

static nvmlReturn_t device_lookup(const char *name, const char *text, unsigned long long number, int is_text,
                                  nvmlDevice_t *device)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    if (refcount <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || (is_text && !text))
        return NVML_ERROR_INVALID_ARGUMENT;
    req_init(&q, name);
    if (is_text)
        req_str(&q, text);
    else
        req_uint(&q, number);
    if ((rc = call(&q, &r)) != NVML_SUCCESS)
        return rc;
    *device = handle_out(&r, 0);
    reply_free(&r);
    return *device ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return device_lookup("nvmlDeviceGetHandleByIndex", NULL, index, 0, device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    return device_lookup("nvmlDeviceGetHandleByUUID", uuid, 0, 1, device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    return device_lookup("nvmlDeviceGetHandleBySerial", serial, 0, 1, device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    return device_lookup("nvmlDeviceGetHandleByPciBusId", pciBusId, 0, 1, device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

/* ------------------------------------------------------------------ device getters */

static nvmlReturn_t device_text(const char *name, nvmlDevice_t device, char *out, unsigned int length)
{
    struct reply r;
    nvmlReturn_t rc = fetch(&r, name, device, DEVICE, (const void *)1, 0, 0, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    rc = text_out(&r, 0, out, length);
    reply_free(&r);
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    return device_text("nvmlDeviceGetName", device, name, length);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    return device_text("nvmlDeviceGetUUID", device, uuid, length);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    return device_text("nvmlDeviceGetSerial", device, serial, length);
}

/* A getter with a handle, optional unsigned arguments, and unsigned outputs. */
static nvmlReturn_t device_uints(const char *name, const void *handle, enum kind kind, int nargs, const unsigned long long *args,
                                 int nout, unsigned long long *out)
{
    struct reply r;
    nvmlReturn_t rc = fetch(&r, name, handle, kind, (const void *)1, nargs, nargs > 0 ? args[0] : 0, nargs > 1 ? args[1] : 0);
    if (rc != NVML_SUCCESS)
        return rc;
    for (int i = 0; i < nout; i++)
        out[i] = u(&r, i);
    reply_free(&r);
    return NVML_SUCCESS;
}

/* A getter with a handle, up to one unsigned argument and one unsigned int answer in *OUT. */
static nvmlReturn_t uint_call(const char *name, const void *hp, enum kind kind, int nargs, unsigned long long arg,
                              unsigned int *out)
{
    unsigned long long v;
    nvmlReturn_t rc;
    if (!out)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = device_uints(name, hp, kind, nargs, &arg, 1, &v);
    if (rc == NVML_SUCCESS)
        *out = (unsigned int)v;
    return rc;
}

/* Getters of one unsigned int (or a 4-byte enum) of a device. */
#define UINT_GETTER(NAME, SIMNAME, TYPE)                                                    \
    _Static_assert(sizeof(TYPE) == sizeof(unsigned int), #TYPE " is not 4 bytes");         \
    EXPORT nvmlReturn_t DECLDIR NAME(nvmlDevice_t device, TYPE *value)                     \
    {                                                                                       \
        return uint_call(SIMNAME, device, DEVICE, 0, 0, (unsigned int *)value);             \
    }

UINT_GETTER(nvmlDeviceGetIndex, "nvmlDeviceGetIndex", unsigned int)
UINT_GETTER(nvmlDeviceGetMinorNumber, "nvmlDeviceGetMinorNumber", unsigned int)
UINT_GETTER(nvmlDeviceGetArchitecture, "nvmlDeviceGetArchitecture", nvmlDeviceArchitecture_t)
UINT_GETTER(nvmlDeviceGetRetiredPagesPendingStatus, "nvmlDeviceGetRetiredPagesPendingStatus", nvmlEnableState_t)
UINT_GETTER(nvmlDeviceIsMigDeviceHandle, "nvmlDeviceIsMigDeviceHandle", unsigned int)
UINT_GETTER(nvmlDeviceGetGpuInstanceId, "nvmlDeviceGetGpuInstanceId", unsigned int)
UINT_GETTER(nvmlDeviceGetComputeInstanceId, "nvmlDeviceGetComputeInstanceId", unsigned int)
UINT_GETTER(nvmlDeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount", unsigned int)

/* What health checks read: persistence mode, PCIe link, clock event reasons, temperature, NVLink, fabric.
 * Some of these names are newer than the nvml.h we compile against (nvmlDeviceGetGpuMaxPcieLinkGeneration,
 * ...ClocksEventReasons, ...GpuFabricInfo*): their signatures are NVIDIA's current ones. */
UINT_GETTER(nvmlDeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode", nvmlEnableState_t)
UINT_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", unsigned int)
UINT_GETTER(nvmlDeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", unsigned int)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", unsigned int)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", unsigned int)
UINT_GETTER(nvmlDeviceGetGpuMaxPcieLinkGeneration, "nvmlDeviceGetGpuMaxPcieLinkGeneration", unsigned int)

/* Getters of one unsigned long long of a device. */
#define ULL_GETTER(NAME, SIMNAME)                                                              \
    EXPORT nvmlReturn_t DECLDIR NAME(nvmlDevice_t device, unsigned long long *value)          \
    {                                                                                          \
        if (!value)                                                                            \
            return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;      \
        return device_uints(SIMNAME, device, DEVICE, 0, NULL, 1, value);                       \
    }

ULL_GETTER(nvmlDeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons")
ULL_GETTER(nvmlDeviceGetCurrentClocksThrottleReasons, "nvmlDeviceGetCurrentClocksThrottleReasons")
ULL_GETTER(nvmlDeviceGetSupportedClocksEventReasons, "nvmlDeviceGetSupportedClocksEventReasons")
ULL_GETTER(nvmlDeviceGetSupportedClocksThrottleReasons, "nvmlDeviceGetSupportedClocksThrottleReasons")

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                     unsigned int *temp)
{
    return uint_call("nvmlDeviceGetTemperature", device, DEVICE, 1, sensorType, temp);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                              nvmlTemperatureThresholds_t thresholdType, unsigned int *temp)
{
    return uint_call("nvmlDeviceGetTemperatureThreshold", device, DEVICE, 1, thresholdType, temp);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
    return uint_call("nvmlDeviceGetNvLinkState", device, DEVICE, 1, link, (unsigned int *)isActive);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link, unsigned int *version)
{
    return uint_call("nvmlDeviceGetNvLinkVersion", device, DEVICE, 1, link, version);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    return struct_call("nvmlDeviceGetNvLinkRemotePciInfo", device, DEVICE, 1, link, 0, pci, pci_fields, NFIELDS(pci_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                            nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue)
{
    unsigned long long args[2] = {link, counter};
    if (!counterValue)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    return device_uints("nvmlDeviceGetNvLinkErrorCounter", device, DEVICE, 2, args, 1, counterValue);
}

/* nvmlGpuFabricInfo_t and its versioned forms as NVIDIA's current nvml.h lays them out (the header we
 * compile against may predate them). */
struct fabric_v1 {
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    unsigned int state;
};
struct fabric_v3 {
    unsigned int version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    unsigned int state;
    unsigned int healthMask;
    unsigned char healthSummary;   /* v3 only */
};
#define FABRIC_V2 0x02000024u   /* NVML_STRUCT_VERSION(GpuFabricInfo, 2): sizeof 36 */
#define FABRIC_V3 0x03000028u   /* NVML_STRUCT_VERSION(GpuFabricInfo, 3): sizeof 40 */
#ifdef NVML_GPU_FABRIC_UUID_LEN
#define FABRIC_T nvmlGpuFabricInfo_t
#define FABRIC_V_T nvmlGpuFabricInfoV_t
#else
#define FABRIC_T void
#define FABRIC_V_T void
#endif

/* The answer: state, status, cliqueId, healthMask, healthSummary, then clusterUuid's 16 bytes (a server
 * without them answers 5 values and the bytes read 0). */
#define FABRIC_ANSWER (5 + 16)
static nvmlReturn_t fabric_call(nvmlDevice_t device, const void *out, unsigned long long v[FABRIC_ANSWER])
{
    if (!out)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    return device_uints("nvmlDeviceGetGpuFabricInfo", device, DEVICE, 0, NULL, FABRIC_ANSWER, v);
}

static void fabric_uuid(unsigned char uuid[16], const unsigned long long v[FABRIC_ANSWER])
{
    for (int i = 0; i < 16; i++)
        uuid[i] = (unsigned char)v[5 + i];
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, FABRIC_T *gpuFabricInfo)
{
    struct fabric_v1 *info = (struct fabric_v1 *)gpuFabricInfo;
    unsigned long long v[FABRIC_ANSWER];
    nvmlReturn_t rc = fabric_call(device, info, v);
    if (rc != NVML_SUCCESS)
        return rc;
    memset(info, 0, sizeof(*info));
    fabric_uuid(info->clusterUuid, v);
    info->state = (unsigned int)v[0];
    info->status = (nvmlReturn_t)v[1];
    info->cliqueId = (unsigned int)v[2];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, FABRIC_V_T *gpuFabricInfo)
{
    struct fabric_v3 *info = (struct fabric_v3 *)gpuFabricInfo;
    unsigned long long v[FABRIC_ANSWER];
    unsigned int version;
    nvmlReturn_t rc;
    if (info && info->version != FABRIC_V2 && info->version != FABRIC_V3)
        return refcount > 0 ? NVML_ERROR_ARGUMENT_VERSION_MISMATCH : NVML_ERROR_UNINITIALIZED;
    rc = fabric_call(device, info, v);
    if (rc != NVML_SUCCESS)
        return rc;
    version = info->version;
    memset(info, 0, version == FABRIC_V3 ? sizeof(struct fabric_v3) : offsetof(struct fabric_v3, healthSummary));
    info->version = version;
    fabric_uuid(info->clusterUuid, v);
    info->state = (unsigned int)v[0];
    info->status = (nvmlReturn_t)v[1];
    info->cliqueId = (unsigned int)v[2];
    info->healthMask = (unsigned int)v[3];
    if (version == FABRIC_V3)
        info->healthSummary = (unsigned char)v[4];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    return uint_call("nvmlDeviceGetNumaNodeId", device, DEVICE, 0, 0, node);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    unsigned long long v[2];
    nvmlReturn_t rc;
    if (!major || !minor)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = device_uints("nvmlDeviceGetCudaComputeCapability", device, DEVICE, 0, NULL, 2, v);
    if (rc == NVML_SUCCESS) {
        *major = (int)v[0];
        *minor = (int)v[1];
    }
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    unsigned long long v[2];
    nvmlReturn_t rc;
    if (!currentMode || !pendingMode)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = device_uints("nvmlDeviceGetMigMode", device, DEVICE, 0, NULL, 2, v);
    if (rc == NVML_SUCCESS) {
        *currentMode = (unsigned int)v[0];
        *pendingMode = (unsigned int)v[1];
    }
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t *activationStatus)
{
    unsigned long long arg = mode, v;
    nvmlReturn_t rc;
    if (!activationStatus)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = device_uints("nvmlDeviceSetMigMode", device, DEVICE, 1, &arg, 1, &v);
    if (rc == NVML_SUCCESS)
        *activationStatus = (nvmlReturn_t)v;
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                        nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    unsigned long long args[2] = {errorType, counterType};
    if (!eccCounts)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    return device_uints("nvmlDeviceGetTotalEccErrors", device, DEVICE, 2, args, 1, eccCounts);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                                      unsigned int *isPending, unsigned int *failureOccurred)
{
    unsigned long long v[4];
    nvmlReturn_t rc;
    if (!corrRows || !uncRows || !isPending || !failureOccurred)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = device_uints("nvmlDeviceGetRemappedRows", device, DEVICE, 0, NULL, 4, v);
    if (rc == NVML_SUCCESS) {
        *corrRows = (unsigned int)v[0];
        *uncRows = (unsigned int)v[1];
        *isPending = (unsigned int)v[2];
        *failureOccurred = (unsigned int)v[3];
    }
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    if (pci)
        memset(pci, 0, sizeof(*pci));
    return struct_call("nvmlDeviceGetPciInfo", device, DEVICE, 0, 0, 0, pci, pci_fields, NFIELDS(pci_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return nvmlDeviceGetPciInfo_v3(device, pci);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return nvmlDeviceGetPciInfo_v3(device, pci);
}


EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *mem)
{
    nvmlMemory_v2_t v2 = {.version = nvmlMemory_v2};
    nvmlReturn_t rc;
    if (!mem)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    rc = nvmlDeviceGetMemoryInfo_v2(device, &v2);
    if (rc == NVML_SUCCESS) {
        mem->total = v2.total;
        mem->free = v2.free;
        mem->used = v2.used + v2.reserved;   /* version 1 counts the reservation as used */
    }
    return rc;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *mem)
{
    VERSIONED(mem, nvmlMemory_v2);
    return struct_call("nvmlDeviceGetMemoryInfo", device, DEVICE, 0, 0, 0, mem, memory_v2_fields, NFIELDS(memory_v2_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    struct reply r;
    nvmlReturn_t rc = fetch(&r, "nvmlDeviceGetCpuAffinity", device, DEVICE, cpuSet, 1, cpuSetSize, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    for (unsigned int i = 0; i < cpuSetSize; i++)
        cpuSet[i] = (unsigned long)u(&r, (int)i);
    reply_free(&r);
    return NVML_SUCCESS;
}

/* The running processes of a device, compute or graphics (the server's entry point `name`). */
static nvmlReturn_t running_processes(const char *name, nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
    struct reply r;
    unsigned int count;
    nvmlReturn_t rc = fetch(&r, name, device, DEVICE, infoCount, 0, 0, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    count = (unsigned int)u(&r, 0);
    if (count > *infoCount || (count > 0 && !infos)) {
        *infoCount = count;
        reply_free(&r);
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < count; i++) {
        infos[i].pid = (unsigned int)u(&r, 1 + 4 * (int)i);
        infos[i].usedGpuMemory = u(&r, 2 + 4 * (int)i);
        infos[i].gpuInstanceId = (unsigned int)u(&r, 3 + 4 * (int)i);
        infos[i].computeInstanceId = (unsigned int)u(&r, 4 + 4 * (int)i);
    }
    *infoCount = count;
    reply_free(&r);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                    nvmlProcessInfo_t *infos)
{
    return running_processes("nvmlDeviceGetComputeRunningProcesses", device, infoCount, infos);
}

/* Graphics contexts: none on the simulated data-center GPUs (the real library answers SUCCESS and 0 for them;
 * Slurm 24.11's slurmstepd asks for every GPU of a job when it gathers GPU usage). */
EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                     nvmlProcessInfo_t *infos)
{
    return running_processes("nvmlDeviceGetGraphicsRunningProcesses", device, infoCount, infos);
}

/* ------------------------------------------------------------------ MIG devices */

/* A call with a handle and optionally one unsigned argument that answers one handle. */
static nvmlReturn_t handle_call(const char *name, const void *parent, enum kind kind, int has_arg, unsigned long long arg,
                                void **out)
{
    struct reply r;
    nvmlReturn_t rc = fetch(&r, name, parent, kind, out, has_arg ? 1 : 0, arg, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    *out = handle_out(&r, 0);
    reply_free(&r);
    return *out ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    return handle_call("nvmlDeviceGetMigDeviceHandleByIndex", device, DEVICE, 1, index, (void **)migDevice);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    return handle_call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice, DEVICE, 0, 0, (void **)device);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    return struct_call("nvmlDeviceGetAttributes", device, DEVICE, 0, 0, 0, attributes, attribute_fields,
                       NFIELDS(attribute_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    return nvmlDeviceGetAttributes_v2(device, attributes);
}

/* ------------------------------------------------------------------ GPU instances */

/* A profile query: NVALS unsigned values, then the profile's name (copied to PNAME when given). */



EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                                nvmlGpuInstanceProfileInfo_t *info)
{
    return struct_call("nvmlDeviceGetGpuInstanceProfileInfo", device, DEVICE, 1, profile, 0, info, gi_profile_fields,
                       NFIELDS(gi_profile_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                                 nvmlGpuInstanceProfileInfo_v2_t *info)
{
    VERSIONED(info, nvmlGpuInstanceProfileInfo_v2);
    return struct_call("nvmlDeviceGetGpuInstanceProfileInfo", device, DEVICE, 1, profile, 0, info, gi_profile_v2_fields,
                       NFIELDS(gi_profile_v2_fields));
}

/* Newer than the nvml.h of CUDA 11.8 (Debian 12's libnvidia-ml-dev); drivers of 2023 on export it and
 * nvidia-ml-py 12+ calls it for nvmlDeviceGetGpuInstanceProfileInfoById. */
nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                              nvmlGpuInstanceProfileInfo_v2_t *info);

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                                     nvmlGpuInstanceProfileInfo_v2_t *info)
{
    VERSIONED(info, nvmlGpuInstanceProfileInfo_v2);
    return struct_call("nvmlDeviceGetGpuInstanceProfileInfoById", device, DEVICE, 1, profileId, 0, info, gi_profile_v2_fields,
                       NFIELDS(gi_profile_v2_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                                      unsigned int *count)
{
    return uint_call("nvmlDeviceGetGpuInstanceRemainingCapacity", device, DEVICE, 1, profileId, count);
}

/* The GPU- and compute-instance placement queries: NULL PLACEMENTS asks for the count; otherwise the caller's array
 * holds them all (nvml.h).  Both placement structures are {start, size}. */
_Static_assert(offsetof(nvmlGpuInstancePlacement_t, start) == 0 && offsetof(nvmlGpuInstancePlacement_t, size) == sizeof(unsigned int),
               "nvmlGpuInstancePlacement_t is not {start, size}");
_Static_assert(offsetof(nvmlComputeInstancePlacement_t, start) == 0 &&
                   offsetof(nvmlComputeInstancePlacement_t, size) == sizeof(unsigned int),
               "nvmlComputeInstancePlacement_t is not {start, size}");

static nvmlReturn_t placement_list(const char *name, const void *parent, enum kind kind, unsigned int profileId,
                                   unsigned int *starts_sizes, size_t stride, unsigned int *count)
{
    struct reply r;
    unsigned int n;
    nvmlReturn_t rc = fetch(&r, name, parent, kind, count, 1, profileId, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    n = (unsigned int)u(&r, 0);
    if (starts_sizes) {
        for (unsigned int i = 0; i < n; i++) {
            unsigned int *place = (unsigned int *)((char *)starts_sizes + i * stride);
            place[0] = (unsigned int)u(&r, 1 + 2 * (int)i);
            place[1] = (unsigned int)u(&r, 2 + 2 * (int)i);
        }
    }
    *count = n;
    reply_free(&r);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                          nvmlGpuInstancePlacement_t *placements,
                                                                          unsigned int *count)
{
    return placement_list("nvmlDeviceGetGpuInstancePossiblePlacements", device, DEVICE, profileId,
                          placements ? &placements->start : NULL, sizeof(*placements), count);
}

static nvmlReturn_t handle_list(const char *name, const void *parent, enum kind kind, unsigned int profileId,
                                void **out, unsigned int *count)
{
    struct reply r;
    unsigned int n;
    nvmlReturn_t rc = fetch(&r, name, parent, kind, count && out ? (const void *)out : NULL, 1, profileId, 0);
    if (rc != NVML_SUCCESS)
        return rc;
    n = (unsigned int)u(&r, 0);
    for (unsigned int i = 0; i < n; i++)
        out[i] = handle_out(&r, 1 + (int)i);
    *count = n;
    reply_free(&r);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                      nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    return handle_list("nvmlDeviceGetGpuInstances", device, DEVICE, profileId, (void **)gpuInstances, count);
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)
{
    return handle_call("nvmlDeviceGetGpuInstanceById", device, DEVICE, 1, id, (void **)gpuInstance);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    return struct_call("nvmlGpuInstanceGetInfo", gpuInstance, GPU_INSTANCE, 0, 0, 0, info, gi_info_fields,
                       NFIELDS(gi_info_fields));
}

/* ------------------------------------------------------------------ compute instances */



EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                         unsigned int engProfile,
                                                                         nvmlComputeInstanceProfileInfo_t *info)
{
    return struct_call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gpuInstance, GPU_INSTANCE, 2, profile, engProfile,
                       info, ci_profile_fields, NFIELDS(ci_profile_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                          unsigned int engProfile,
                                                                          nvmlComputeInstanceProfileInfo_v2_t *info)
{
    VERSIONED(info, nvmlComputeInstanceProfileInfo_v2);
    return struct_call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gpuInstance, GPU_INSTANCE, 2, profile, engProfile,
                       info, ci_profile_v2_fields, NFIELDS(ci_profile_v2_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                               unsigned int profileId, unsigned int *count)
{
    return uint_call("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", gpuInstance, GPU_INSTANCE, 1, profileId, count);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                               nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
    return handle_list("nvmlGpuInstanceGetComputeInstances", gpuInstance, GPU_INSTANCE, profileId,
                       (void **)computeInstances, count);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                                  nvmlComputeInstance_t *computeInstance)
{
    return handle_call("nvmlGpuInstanceGetComputeInstanceById", gpuInstance, GPU_INSTANCE, 1, id, (void **)computeInstance);
}

EXPORT nvmlReturn_t DECLDIR nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    return struct_call("nvmlComputeInstanceGetInfo", computeInstance, COMPUTE_INSTANCE, 0, 0, 0, info, ci_info_fields,
                       NFIELDS(ci_info_fields));
}

EXPORT nvmlReturn_t DECLDIR nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    return nvmlComputeInstanceGetInfo_v2(computeInstance, info);
}

/* ------------------------------------------------------------------ MIG changes */

EXPORT nvmlReturn_t DECLDIR nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance)
{
    return handle_call("nvmlDeviceCreateGpuInstance", device, DEVICE, 1, profileId, (void **)gpuInstance);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                 nvmlComputeInstance_t *computeInstance)
{
    return handle_call("nvmlGpuInstanceCreateComputeInstance", gpuInstance, GPU_INSTANCE, 1, profileId, (void **)computeInstance);
}

/* NAME(handle, profileId, placement) -> a new instance handle in *OUT (the "WithPlacement" creations). */
static nvmlReturn_t create_placed(const char *name, const void *parent, enum kind kind, unsigned int profileId,
                                  unsigned int start, unsigned int size, int has_placement, void **out)
{
    struct req q;
    struct reply r;
    nvmlReturn_t rc;
    if (!has_placement || !out)
        return refcount > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    REQ_H(&q, name, parent, kind);
    req_uint(&q, profileId);
    req_uint(&q, start);
    req_uint(&q, size);
    rc = call(&q, &r);
    if (rc != NVML_SUCCESS)
        return rc;
    *out = handle_out(&r, 0);
    reply_free(&r);
    return *out ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t DECLDIR nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                                     const nvmlGpuInstancePlacement_t *placement,
                                                                     nvmlGpuInstance_t *gpuInstance)
{
    return create_placed("nvmlDeviceCreateGpuInstanceWithPlacement", device, DEVICE, profileId,
                         placement ? placement->start : 0, placement ? placement->size : 0, placement != NULL,
                         (void **)gpuInstance);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                              const nvmlComputeInstancePlacement_t *placement,
                                                                              nvmlComputeInstance_t *computeInstance)
{
    return create_placed("nvmlGpuInstanceCreateComputeInstanceWithPlacement", gpuInstance, GPU_INSTANCE, profileId,
                         placement ? placement->start : 0, placement ? placement->size : 0, placement != NULL,
                         (void **)computeInstance);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                                nvmlComputeInstancePlacement_t *placements,
                                                                                unsigned int *count)
{
    return placement_list("nvmlGpuInstanceGetComputeInstancePossiblePlacements", gpuInstance, GPU_INSTANCE, profileId,
                          placements ? &placements->start : NULL, sizeof(*placements), count);
}

EXPORT nvmlReturn_t DECLDIR nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    return device_uints("nvmlGpuInstanceDestroy", gpuInstance, GPU_INSTANCE, 0, NULL, 0, NULL);
}

EXPORT nvmlReturn_t DECLDIR nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    return device_uints("nvmlComputeInstanceDestroy", computeInstance, COMPUTE_INSTANCE, 0, NULL, 0, NULL);
}
