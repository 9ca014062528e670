/* The phase clock's Python face: TaskPhases (one task's clock), PhaseHook
 * (a function wrapped to charge its time to a phase: plain, a codec's
 * decompression, the building of a virtual array, uproot's wait for a chunk
 * of bytes or for its reader's queue) and the clock of the task each thread
 * runs.
 *
 * The hooks run hundreds of times per chunk inside the user's analysis, so
 * the common calls cost no Python frame: a PhaseHook finds the thread's
 * clock in a C thread-local, reads the clocks only when the call switches
 * phase (roast/phases.h) and calls the wrapped function by vectorcall. The
 * arithmetic is native/src/phases.c; a failure of the clock (a call past
 * the stack it keeps) is counted in the task's `errors`, never raised into
 * the analysis. */
#include "../roastpy.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "roast/phases.h"

/* python/roastcoffea/instrument/phases.py exports these as PHASES. */
static const char *const phase_names[ROAST_PHASE_COUNT] = {
    "open", "read", "decompress", "interpret", "user", "output", "other",
};
#define PHASE_READ 1
#define PHASE_OTHER 6

static PyObject *phase_strs[ROAST_PHASE_COUNT]; /* interned phase_names */

/* uproot.compression's codec names; exported as CODECS. */
static const char *const codec_names[ROAST_CODEC_COUNT] = {"ZLIB", "LZMA", "LZ4", "ZSTD"};
static PyObject *codec_strs[ROAST_CODEC_COUNT];

/* One uproot basket the task parsed: its file (a strong reference), its seek
 * and the sizes of its TKey. Kept in C, not as Python tuples: a chunk parses
 * tens to hundreds, and every tuple would count toward the garbage
 * collector's next collection while the chunk runs. */
typedef struct {
    PyObject *file;
    long long seek, nbytes, size;
} basket_entry;

typedef struct {
    basket_entry *entries;
    Py_ssize_t count, capacity;
} basket_log;

typedef struct {
    PyObject_HEAD
    roast_phase_clock clock;
    double started;
    long long read_bytes;
    unsigned long long passed, errors;
    PyObject *item;
    basket_log baskets; /* the uproot baskets the task parsed (python/.../_phase_hooks.py) */
    /* the task's work run on helper threads (uproot's executors): wall and CPU per phase */
    double helper_wall[ROAST_PHASE_COUNT], helper_cpu[ROAST_PHASE_COUNT];
    unsigned long long helper_runs;
    char output_measured, in_work;
} TaskPhases;

static void basket_log_clear(basket_log *log)
{
    for (Py_ssize_t i = 0; i < log->count; i++)
        Py_CLEAR(log->entries[i].file);
    log->count = 0;
}

static void basket_log_release(basket_log *log)
{
    basket_log_clear(log);
    PyMem_Free(log->entries);
    *log = (basket_log){0};
}

/* Appends an entry (taking a new reference to file); -1 with MemoryError. */
static int basket_log_add(basket_log *log, PyObject *file, long long seek, long long nbytes,
                          long long size)
{
    if (log->count == log->capacity) {
        Py_ssize_t capacity = log->capacity ? 2 * log->capacity : 64;
        basket_entry *grown = PyMem_Resize(log->entries, basket_entry, (size_t)capacity);
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        log->entries = grown;
        log->capacity = capacity;
    }
    log->entries[log->count++] = (basket_entry){Py_NewRef(file), seek, nbytes, size};
    return 0;
}

/* The clock of the task this thread runs (a strong reference), or NULL. */
static _Thread_local TaskPhases *thread_task;

static double seconds_of(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The wall clock (time.perf_counter's): vDSO, no system call. */
static double wall_now(void)
{
    return seconds_of(CLOCK_MONOTONIC);
}

/* The thread's CPU clock: a system call, read at a switch only when the
 * clock wants it (roast/phases.h says when). */
static double cpu_now(void)
{
    return seconds_of(CLOCK_THREAD_CPUTIME_ID);
}

/* Both clocks: where a task's sum starts, is rebased or ends. */
static roast_instant clocks_now(void)
{
    double wall = wall_now();
    return (roast_instant){wall, cpu_now()};
}

/* The calling thread's /proc/thread-self/schedstat, opened once per thread
 * (-1: not open yet or unreadable) and closed when the thread ends. */
static pthread_key_t schedstat_key;
static pthread_once_t schedstat_once = PTHREAD_ONCE_INIT;
static _Thread_local int schedstat_fd = -1;
static _Thread_local bool schedstat_tried;

static void schedstat_close(void *fd)
{
    close((int)(intptr_t)fd - 1);
}

static void schedstat_key_create(void)
{
    if (pthread_key_create(&schedstat_key, schedstat_close) != 0)
        schedstat_key = (pthread_key_t)-1;
}

static int schedstat_open(void)
{
    schedstat_tried = true;
    pthread_once(&schedstat_once, schedstat_key_create);
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && pthread_setspecific(schedstat_key, (void *)(intptr_t)(fd + 1)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The thread's run-queue delay in seconds: the time it was runnable and waiting
 * for a CPU, the second field of its schedstat (nanoseconds). One pread of an
 * open file; ROAST_RUNQ_UNREAD where the kernel keeps no schedstat. */
static double runq_now(void)
{
    if (!schedstat_tried)
        schedstat_fd = schedstat_open();
    if (schedstat_fd < 0)
        return ROAST_RUNQ_UNREAD;
    char text[96];
    ssize_t n = pread(schedstat_fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return ROAST_RUNQ_UNREAD;
    text[n] = '\0';
    char *end;
    strtoull(text, &end, 10); /* the time on a CPU */
    unsigned long long delay = strtoull(end, &end, 10);
    return end == text ? ROAST_RUNQ_UNREAD : (double)delay * 1e-9;
}

/* After a switch that read the CPU clock: the run-queue delay too, when the
 * time off CPU since its last reading makes it worth one (roast/phases.h). */
static void read_runq_if_wanted(roast_phase_clock *clock, roast_instant now)
{
    if (!isnan(now.cpu) && roast_phase_wants_runq(clock))
        roast_phase_add_runq(clock, runq_now());
}

static const roast_instant no_instant = {0.0, 0.0};

/* The index of name in strs; -1 with ValueError (not a what) for anything else. */
static int name_index(PyObject *name, PyObject *const *strs, int count, const char *what)
{
    for (int i = 0; i < count; i++)
        if (name == strs[i])
            return i;
    for (int i = 0; i < count; i++) {
        int eq = PyUnicode_Check(name) ? PyUnicode_Compare(name, strs[i]) == 0 : 0;
        if (eq)
            return i;
    }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "not a %s: %R", what, name);
    return -1;
}

static int phase_index(PyObject *name)
{
    return name_index(name, phase_strs, ROAST_PHASE_COUNT, "phase");
}

/* Enters phase; may_wait: the call may wait, off CPU (roast/phases.h). */
static void task_enter(TaskPhases *task, int phase, bool opaque, bool may_wait)
{
    roast_phase_clock *clock = &task->clock;
    roast_instant now = no_instant;
    if (roast_phase_enter_switches(clock, phase, opaque)) {
        now = (roast_instant){wall_now(), ROAST_CPU_UNREAD};
        if (roast_phase_wants_cpu_entering(clock, now.wall, may_wait))
            now.cpu = cpu_now();
    }
    if (roast_phase_enter(clock, phase, opaque, now) != ROAST_OK)
        task->errors++;
    read_runq_if_wanted(clock, now);
}

/* The clocks to leave the top phase at: none when the leave does not switch,
 * the CPU clock only when the clock wants it. */
static roast_instant leaving_now(const roast_phase_clock *clock)
{
    if (!roast_phase_leave_switches(clock))
        return no_instant;
    roast_instant now = {wall_now(), ROAST_CPU_UNREAD};
    if (roast_phase_wants_cpu_leaving(clock, now.wall))
        now.cpu = cpu_now();
    return now;
}

/* Leaves the top phase, its stretch also charged to codec unless -1; returns
 * the stretch's wall seconds. */
static double task_leave(TaskPhases *task, int codec)
{
    double stretch;
    roast_instant now = leaving_now(&task->clock);
    if (roast_phase_leave(&task->clock, now, codec, &stretch) != ROAST_OK)
        task->errors++;
    read_runq_if_wanted(&task->clock, now);
    return stretch;
}

/* Leaves the top phase, its stretch charged to phase: what the call turned out to be. */
static void task_leave_as(TaskPhases *task, int phase)
{
    double stretch;
    roast_instant now = leaving_now(&task->clock);
    if (roast_phase_leave_as(&task->clock, now, phase, &stretch) != ROAST_OK)
        task->errors++;
    read_runq_if_wanted(&task->clock, now);
}

/* ---- TaskPhases ------------------------------------------------------------ */

static PyObject *task_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"cpu_interval", "base", NULL};
    double cpu_interval = ROAST_PHASE_CPU_INTERVAL;
    PyObject *base_name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$dO:TaskPhases", kwlist, &cpu_interval,
                                     &base_name))
        return NULL;
    int base = base_name ? phase_index(base_name) : PHASE_OTHER;
    if (base < 0)
        return NULL;
    if (!(cpu_interval >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "cpu_interval must be a number >= 0");
        return NULL;
    }
    TaskPhases *task = (TaskPhases *)type->tp_alloc(type, 0);
    if (!task)
        return NULL;
    roast_instant now = clocks_now();
    task->started = now.wall;
    task->item = Py_NewRef(Py_None);
    roast_status st = roast_phase_clock_init(&task->clock, base, now, cpu_interval);
    if (st != ROAST_OK) {
        Py_DECREF(task);
        return roastpy_raise(st, NULL);
    }
    task->clock.wait_phases = 1u << PHASE_READ; /* and the opaque calls: open, output */
    roast_phase_add_runq(&task->clock, runq_now());
    return (PyObject *)task;
}

static int task_traverse(TaskPhases *task, visitproc visit, void *arg)
{
    Py_VISIT(task->item);
    for (Py_ssize_t i = 0; i < task->baskets.count; i++)
        Py_VISIT(task->baskets.entries[i].file);
    return 0;
}

static int task_clear(TaskPhases *task)
{
    Py_CLEAR(task->item);
    basket_log_clear(&task->baskets);
    return 0;
}

static void task_dealloc(TaskPhases *task)
{
    PyObject_GC_UnTrack(task);
    task_clear(task);
    basket_log_release(&task->baskets);
    roast_phase_clock_release(&task->clock);
    Py_TYPE(task)->tp_free((PyObject *)task);
}

static PyObject *task_enter_method(TaskPhases *task, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"phase", "opaque", NULL};
    PyObject *name;
    int opaque = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p:enter", kwlist, &name, &opaque))
        return NULL;
    int phase = phase_index(name);
    if (phase < 0)
        return NULL;
    task_enter(task, phase, opaque, opaque || ((task->clock.wait_phases >> phase) & 1u));
    Py_RETURN_NONE;
}

static PyObject *task_leave_method(TaskPhases *task, PyObject *unused)
{
    (void)unused;
    return PyFloat_FromDouble(task_leave(task, -1));
}

static PyObject *task_rebase(TaskPhases *task, PyObject *name)
{
    int phase = phase_index(name);
    if (phase < 0)
        return NULL;
    roast_instant now = clocks_now();
    roast_phase_rebase(&task->clock, phase, now);
    read_runq_if_wanted(&task->clock, now);
    Py_RETURN_NONE;
}

static PyObject *task_close(TaskPhases *task, PyObject *unused)
{
    (void)unused;
    roast_phase_charge(&task->clock, clocks_now());
    roast_phase_add_runq(&task->clock, runq_now());
    return PyFloat_FromDouble(task->clock.last - task->started);
}

static PyObject *seconds_dict(const double *seconds)
{
    PyObject *dict = PyDict_New();
    for (int i = 0; dict && i < ROAST_PHASE_COUNT; i++) {
        PyObject *value = PyFloat_FromDouble(seconds[i]);
        if (!value || PyDict_SetItem(dict, phase_strs[i], value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

static PyObject *task_get_wall(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->clock.wall);
}

static PyObject *task_get_cpu(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->clock.cpu);
}

/* {codec name: [wall, cpu, bytes in, bytes out]} of the codecs the task used. */
static PyObject *task_get_codecs(TaskPhases *task, void *closure)
{
    (void)closure;
    PyObject *dict = PyDict_New();
    for (int i = 0; dict && i < ROAST_CODEC_COUNT; i++) {
        const roast_codec_totals *c = &task->clock.codecs[i];
        if (!c->calls)
            continue;
        PyObject *totals = Py_BuildValue("[ddKK]", c->wall, c->cpu, (unsigned long long)c->bytes_in,
                                         (unsigned long long)c->bytes_out);
        if (!totals || PyDict_SetItem(dict, codec_strs[i], totals) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(totals);
    }
    return dict;
}

static PyObject *task_take_baskets(TaskPhases *task, PyObject *file)
{
    PyObject *taken = PyDict_New();
    for (Py_ssize_t i = 0; taken && i < task->baskets.count; i++) {
        const basket_entry *entry = &task->baskets.entries[i];
        if (entry->file != file)
            continue;
        PyObject *seek = PyLong_FromLongLong(entry->seek);
        PyObject *sizes = Py_BuildValue("(LL)", entry->nbytes, entry->size);
        if (!seek || !sizes || PyDict_SetItem(taken, seek, sizes) < 0)
            Py_CLEAR(taken);
        Py_XDECREF(seek);
        Py_XDECREF(sizes);
    }
    basket_log_clear(&task->baskets);
    return taken;
}

/* Adds a helper thread's closed clock to the task: its phases beside the
 * task's own (not in their sum: another thread's time), and its codecs,
 * bytes, baskets and errors with the task's, whose chunk they are. */
static PyObject *task_add_helper(TaskPhases *task, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, Py_TYPE(task)) || arg == (PyObject *)task) {
        PyErr_SetString(PyExc_TypeError, "add_helper takes another TaskPhases");
        return NULL;
    }
    TaskPhases *helper = (TaskPhases *)arg;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        task->helper_wall[i] += helper->clock.wall[i];
        task->helper_cpu[i] += helper->clock.cpu[i];
    }
    for (int i = 0; i < ROAST_CODEC_COUNT; i++) {
        roast_codec_totals *to = &task->clock.codecs[i];
        const roast_codec_totals *from = &helper->clock.codecs[i];
        to->wall += from->wall;
        to->cpu += from->cpu;
        to->bytes_in += from->bytes_in;
        to->bytes_out += from->bytes_out;
        to->calls += from->calls;
    }
    task->read_bytes += helper->read_bytes;
    task->errors += helper->errors;
    task->helper_runs++;
    const basket_log *log = &helper->baskets;
    for (Py_ssize_t i = 0; i < log->count; i++) {
        const basket_entry *e = &log->entries[i];
        if (basket_log_add(&task->baskets, e->file, e->seek, e->nbytes, e->size) < 0)
            return NULL;
    }
    basket_log_clear(&helper->baskets);
    Py_RETURN_NONE;
}

/* The run-queue delay per phase; None where the kernel keeps no schedstat. */
static PyObject *task_get_cpu_wait(TaskPhases *task, void *closure)
{
    (void)closure;
    if (isnan(task->clock.runq_read))
        Py_RETURN_NONE;
    return seconds_dict(task->clock.cpu_wait);
}

static PyObject *task_get_helper_wall(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->helper_wall);
}

static PyObject *task_get_helper_cpu(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->helper_cpu);
}

static PyObject *task_get_baskets(TaskPhases *task, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(task->baskets.count);
    for (Py_ssize_t i = 0; list && i < task->baskets.count; i++) {
        const basket_entry *e = &task->baskets.entries[i];
        PyObject *entry = Py_BuildValue("(OLLL)", e->file, e->seek, e->nbytes, e->size);
        if (!entry)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, entry);
    }
    return list;
}

static PyMethodDef task_methods[] = {
    {"enter", (PyCFunction)(void (*)(void))task_enter_method, METH_VARARGS | METH_KEYWORDS,
     "enter($self, phase, opaque=False)\n--\n\nStart charging phase (until the matching leave()). An "
     "opaque phase charges its hooked calls' time to itself."},
    {"leave", (PyCFunction)task_leave_method, METH_NOARGS,
     "leave($self, /)\n--\n\nStop charging the top phase; returns the wall seconds of its last "
     "stretch (zero for a call nested in its own phase)."},
    {"rebase", (PyCFunction)task_rebase, METH_O,
     "rebase($self, phase, /)\n--\n\nCharge time outside every hooked call to phase from now on."},
    {"close", (PyCFunction)task_close, METH_NOARGS,
     "close($self, /)\n--\n\nCharge the last stretch; returns the wall seconds the clock ran."},
    {"take_baskets", (PyCFunction)task_take_baskets, METH_O,
     "take_baskets($self, file, /)\n--\n\n{seek: (fNbytes, fObjlen + fKeylen)} of the logged baskets "
     "of file (by identity); empties the log."},
    {"add_helper", (PyCFunction)task_add_helper, METH_O,
     "add_helper($self, helper, /)\n--\n\nAdd a helper thread's closed clock: its phases to helper_wall and "
     "helper_cpu (beside the task's own), its codecs, read_bytes, baskets (moved) and errors "
     "to the task's; counts a helper run."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef task_getset[] = {
    {"wall", (getter)task_get_wall, NULL, "Wall seconds (perf_counter) per phase, a new dict.",
     NULL},
    {"cpu", (getter)task_get_cpu, NULL, "Thread CPU seconds (thread_time) per phase, a new dict.",
     NULL},
    {"codecs", (getter)task_get_codecs, NULL,
     "Per codec used: [wall, cpu, compressed bytes in, bytes out], a new dict.", NULL},
    {"cpu_wait", (getter)task_get_cpu_wait, NULL,
     "Seconds per phase the thread was runnable, waiting for a CPU (the kernel's run-queue "
     "delay), a new dict; None where the kernel keeps no schedstat.",
     NULL},
    {"helper_wall", (getter)task_get_helper_wall, NULL,
     "Wall seconds per phase of the task's work on helper threads, a new dict.", NULL},
    {"helper_cpu", (getter)task_get_helper_cpu, NULL,
     "Thread CPU seconds per phase of the task's work on helper threads, a new dict.", NULL},
    {"baskets", (getter)task_get_baskets, NULL,
     "(file, seek, fNbytes, fObjlen + fKeylen) of each uproot basket the task parsed since "
     "the log was last taken, a new list.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

_Static_assert(sizeof(uint32_t) == sizeof(unsigned int), "uint32_t is not unsigned int");
_Static_assert(sizeof(bool) == sizeof(char), "T_BOOL reads a char");

static PyMemberDef task_members[] = {
    {"switches", T_ULONGLONG, offsetof(TaskPhases, clock.switches), READONLY,
     "Phase switches: hooked calls that read the wall clock (and the CPU clock when due) on "
     "entry and exit."},
    {"nested", T_ULONGLONG, offsetof(TaskPhases, clock.nested), READONLY,
     "Hooked calls inside a call of the same phase: they read no clock."},
    {"opaque", T_UINT, offsetof(TaskPhases, clock.opaque), READONLY,
     "Opaque phases running: while above 0, hooked calls charge nothing of their own."},
    {"cpu_interval", T_DOUBLE, offsetof(TaskPhases, clock.cpu_interval), READONLY,
     "Wall seconds between reads of the thread's CPU clock, at least (0: every switch)."},
    {"cpu_reads", T_ULONGLONG, offsetof(TaskPhases, clock.cpu_reads), READONLY,
     "Reads of the thread's CPU clock (a system call each)."},
    {"cpu_split_bound", T_DOUBLE, offsetof(TaskPhases, clock.split_bound), READONLY,
     "Seconds the thread was off CPU in windows between CPU clock reads that several phases "
     "or codecs shared (their CPU split by wall): bounds the error of each phase's CPU."},
    {"cpu_wait_bound", T_DOUBLE, offsetof(TaskPhases, clock.runq_bound), READONLY,
     "Seconds of run-queue delay split over several phases that were off CPU between two "
     "of its readings: bounds the error of each phase's cpu_wait."},
    {"runq_reads", T_ULONGLONG, offsetof(TaskPhases, clock.runq_reads), READONLY,
     "Readings of the run-queue delay (the task's start and end, and after waits)."},
    {"started", T_DOUBLE, offsetof(TaskPhases, started), READONLY,
     "When the clock started (perf_counter seconds)."},
    {"read_bytes", T_LONGLONG, offsetof(TaskPhases, read_bytes), 0,
     "Compressed bytes the task waited for (first wait of each uproot chunk)."},
    {"helper_runs", T_ULONGLONG, offsetof(TaskPhases, helper_runs), READONLY,
     "Helper clocks added (add_helper): the task's calls run on helper threads."},
    {"passed", T_ULONGLONG, offsetof(TaskPhases, passed), 0,
     "Hooked calls that only passed the call on (inside an opaque phase, or at no phase "
     "boundary)."},
    {"errors", T_ULONGLONG, offsetof(TaskPhases, errors), READONLY,
     "Clock operations that failed: calls past the deepest stack kept or with no memory to "
     "grow it (their time goes to the phase under them), a leave without an enter, an "
     "uproot chunk or basket whose attributes the hooks could not read (its wait passed on "
     "untimed or its bytes uncounted, its TKey sizes not logged)."},
    {"item", T_OBJECT, offsetof(TaskPhases, item), 0, "The coffea WorkItem of the task, or None."},
    {"output_measured", T_BOOL, offsetof(TaskPhases, output_measured), 0,
     "Whether the output was compressed inside the task (coffea's compression on)."},
    {"in_work", T_BOOL, offsetof(TaskPhases, in_work), 0,
     "Whether coffea's work function runs (events() then starts the user's code)."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_TaskPhasesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.TaskPhases",
    .tp_basicsize = sizeof(TaskPhases),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TaskPhases(*, cpu_interval=0.001, base='other')\n--\n\nOne task's phase clock: wall "
              "and CPU seconds per phase, bytes, codecs; time outside every hooked call is base's."
              "\nNested phases are exclusive; the phases add up to the "
              "time the clock ran. The thread's CPU clock is read at most every cpu_interval "
              "seconds, and around waits; the CPU in between is split over the phases by their "
              "wall, the time off CPU charged to the waits first (cpu_split_bound bounds the "
              "error).",
    .tp_new = task_new,
    .tp_dealloc = (destructor)task_dealloc,
    .tp_traverse = (traverseproc)task_traverse,
    .tp_clear = (inquiry)task_clear,
    .tp_methods = task_methods,
    .tp_getset = task_getset,
    .tp_members = task_members,
};

/* ---- the thread's task ------------------------------------------------------ */

PyObject *roastpy_current_task(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return Py_NewRef(thread_task ? (PyObject *)thread_task : Py_None);
}

PyObject *roastpy_set_current_task(PyObject *module, PyObject *task)
{
    (void)module;
    if (task != Py_None && !PyObject_TypeCheck(task, &roastpy_TaskPhasesType)) {
        PyErr_Format(PyExc_TypeError, "expected TaskPhases or None, not %.100s",
                     Py_TYPE(task)->tp_name);
        return NULL;
    }
    TaskPhases *old = thread_task;
    thread_task = task == Py_None ? NULL : (TaskPhases *)Py_NewRef(task);
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

/* ---- PhaseHook -------------------------------------------------------------- */

/* Six kinds, one call function each: a plain hook charges its call to
 * phase; a codec hook also adds the call to its codec's totals; a
 * materializing hook is awkward's VirtualNDArray.materialize: it times only
 * the building of an array not built yet (its _array still the sentinel); a
 * chunk-wait hook is uproot's Chunk.wait: it times only a wait for bytes
 * from the source (chunk_reads) and adds them to the task's read_bytes; a
 * basket hook is uproot's TBasket.read_members, passed on (it has no phase)
 * and the TKey sizes uproot has just parsed logged in the task's baskets; a
 * queue hook is queue.Queue.get: it times only a get from an empty queue,
 * a wait for what is queued next, charged to the phase of what ended it. */
#define MAX_ENDED_BY 4
typedef struct {
    PyObject *func;
    int phase; /* -1 for a basket hook */
    bool opaque;
    int codec;                /* a codec hook's ROAST codec, else -1 */
    PyObject *unmaterialized; /* a materializing hook's sentinel (awkward's UNMATERIALIZED) */
    PyTypeObject *chunk; /* a chunk-wait hook's in-memory future type (uproot's TrivialFuture) */
    bool basket;
    bool queue; /* a queue hook: queue.Queue.get */
    /* a queue hook's wait that got an instance of ended_types[i] is ended_phases[i]'s */
    PyTypeObject *ended_types[MAX_ENDED_BY];
    int ended_phases[MAX_ENDED_BY];
    int ended;
} hook_spec;

typedef struct {
    PyObject_HEAD
    hook_spec spec;
    vectorcallfunc vectorcall;
} PhaseHook;

/* The call outside any phase boundary: no task, or inside an opaque phase. */
static inline PyObject *hook_pass(PhaseHook *hook, TaskPhases *task, PyObject *const *args,
                                  size_t nargsf, PyObject *kwnames)
{
    if (task)
        task->passed++;
    return PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
}

/* The call charged to the hook's phase; may_wait: it may wait, off CPU. */
static PyObject *timed_call(PhaseHook *hook, TaskPhases *task, PyObject *const *args,
                            size_t nargsf, PyObject *kwnames, bool may_wait)
{
    Py_INCREF(task); /* the call may end the thread's task; leave this one */
    task_enter(task, hook->spec.phase, hook->spec.opaque, may_wait);
    PyObject *result = PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
    task_leave(task, -1); /* reads clocks only: an exception of the call stays as it is */
    Py_DECREF(task);
    return result;
}

static PyObject *hook_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task || task->clock.opaque)
        return hook_pass(hook, task, args, nargsf, kwnames);
    return timed_call(hook, task, args, nargsf, kwnames, hook->spec.opaque);
}

/* len(obj) as a byte count; a failure is the clock's, counted, never raised. */
static uint64_t byte_len(TaskPhases *task, PyObject *obj)
{
    Py_ssize_t n = obj ? PyObject_Length(obj) : 0;
    if (n < 0) {
        PyErr_Clear();
        task->errors++;
        return 0;
    }
    return (uint64_t)n;
}

/* The compressed input of decompress(self, data, ...): argument 1 or data=. */
static PyObject *codec_input(PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs >= 2)
        return args[1];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "data") == 0)
            return args[nargs + i];
    return NULL;
}

static PyObject *codec_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task || task->clock.opaque)
        return hook_pass(hook, task, args, nargsf, kwnames);
    Py_INCREF(task);
    uint64_t bytes_in = byte_len(task, codec_input(args, nargsf, kwnames));
    task_enter(task, hook->spec.phase, hook->spec.opaque, hook->spec.opaque);
    PyObject *result = PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
    task_leave(task, hook->spec.codec);
    uint64_t bytes_out = result ? byte_len(task, result) : 0;
    if (roast_phase_add_codec(&task->clock, hook->spec.codec, bytes_in, bytes_out) != ROAST_OK)
        task->errors++;
    Py_DECREF(task);
    return result;
}

/* The attributes the materializing, chunk-wait, basket and queue hooks read
 * (interned at module init). */
static PyObject *str_array, *str_raw_data, *str_future, *str_is_memmap, *str_start, *str_stop,
    *str_members, *str_file, *str_cursor, *str_index, *str_fNbytes, *str_fObjlen, *str_fKeylen,
    *str_queue;
static PyObject **const attr_strs[] = {
    &str_array,   &str_raw_data, &str_future,  &str_is_memmap, &str_start,
    &str_stop,    &str_members,  &str_file,    &str_cursor,    &str_index,
    &str_fNbytes, &str_fObjlen,  &str_fKeylen, &str_queue,
};
static const char *const attr_names[] = {
    "_array", "_raw_data", "_future", "_is_memmap", "_start",  "_stop",   "_members",
    "_file",  "_cursor",   "_index",  "fNbytes",    "fObjlen", "fKeylen", "queue",
};
#define ATTR_NAMES (sizeof attr_names / sizeof *attr_names)

/* Whether waiting for chunk waits for bytes from the source: its bytes are not
 * loaded yet (_raw_data None) and its future is not an in-memory one, unless
 * the chunk is memory-mapped (its bytes then arrive by page faults: a read).
 * An object without these attributes is timed: it may be a read. */
static bool chunk_reads(PhaseHook *hook, TaskPhases *task, PyObject *chunk)
{
    PyObject *raw = PyObject_GetAttr(chunk, str_raw_data);
    if (!raw)
        PyErr_Clear();
    bool loaded = raw && raw != Py_None;
    Py_XDECREF(raw);
    if (loaded)
        return false;
    PyObject *future = PyObject_GetAttr(chunk, str_future);
    if (!future) {
        PyErr_Clear();
        return true;
    }
    bool in_memory = PyObject_TypeCheck(future, hook->spec.chunk);
    Py_DECREF(future);
    if (!in_memory)
        return true;
    PyObject *memmap = PyObject_GetAttr(chunk, str_is_memmap);
    int mapped = memmap ? PyObject_IsTrue(memmap) : -1;
    Py_XDECREF(memmap);
    if (mapped < 0) { /* a clock error, not a read */
        PyErr_Clear();
        task->errors++;
        return false;
    }
    return mapped;
}

/* chunk's _stop - _start, its compressed bytes; -1 (an error counted) if unreadable. */
static long long chunk_bytes(TaskPhases *task, PyObject *chunk)
{
    PyObject *start = PyObject_GetAttr(chunk, str_start);
    PyObject *stop = start ? PyObject_GetAttr(chunk, str_stop) : NULL;
    long long bytes = -1;
    if (stop && PyLong_Check(start) && PyLong_Check(stop)) {
        long long first = PyLong_AsLongLong(start);
        long long last = PyErr_Occurred() ? -1 : PyLong_AsLongLong(stop);
        if (!PyErr_Occurred())
            bytes = last - first;
    }
    Py_XDECREF(start);
    Py_XDECREF(stop);
    if (bytes < 0) {
        PyErr_Clear();
        task->errors++;
    }
    return bytes;
}

/* Whether the call is timed, told by its first argument (reading it may run
 * Python code: the caller holds a reference to task). */
typedef bool (*timed_if)(PhaseHook *hook, TaskPhases *task, PyObject *first);

/* The call timed if its first argument says so, else passed on. */
static PyObject *call_timed_if(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames, timed_if timed, bool may_wait)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task || task->clock.opaque || PyVectorcall_NARGS(nargsf) < 1)
        return hook_pass(hook, task, args, nargsf, kwnames);
    Py_INCREF(task); /* reading the argument's attributes may run Python code */
    PyObject *result = timed(hook, task, args[0])
                           ? timed_call(hook, task, args, nargsf, kwnames, may_wait)
                           : hook_pass(hook, task, args, nargsf, kwnames);
    Py_DECREF(task);
    return result;
}

/* Whether array (an awkward VirtualNDArray) is still to be built: its _array
 * is the hook's sentinel. An object without one is timed: it may be. */
static bool array_unbuilt(PhaseHook *hook, TaskPhases *task, PyObject *array)
{
    (void)task;
    PyObject *built = PyObject_GetAttr(array, str_array);
    if (!built) {
        PyErr_Clear();
        return true;
    }
    bool unbuilt = built == hook->spec.unmaterialized;
    Py_DECREF(built);
    return unbuilt;
}

static PyObject *materialize_call(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
{
    return call_timed_if(self, args, nargsf, kwnames, array_unbuilt, false);
}

static PyObject *wait_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task || task->clock.opaque || PyVectorcall_NARGS(nargsf) < 1)
        return hook_pass(hook, task, args, nargsf, kwnames);
    Py_INCREF(task); /* reading the chunk's attributes may run Python code */
    PyObject *result;
    if (!chunk_reads(hook, task, args[0])) {
        result = hook_pass(hook, task, args, nargsf, kwnames);
    } else {
        task_enter(task, hook->spec.phase, hook->spec.opaque, hook->spec.opaque);
        result = PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
        task_leave(task, -1);
        long long bytes = result ? chunk_bytes(task, args[0]) : -1; /* a failed wait: none */
        if (bytes > 0)
            task->read_bytes += bytes;
    }
    Py_DECREF(task);
    return result;
}

/* Whether value (NULL after a failed lookup) is an int that fits *n; an
 * exception is set when not. Stops at the first failure: *ok stays false. */
static void read_long_long(PyObject *value, long long *n, bool *ok)
{
    if (!*ok)
        return;
    *n = value ? PyLong_AsLongLong(value) : -1;
    *ok = value && !(*n == -1 && PyErr_Occurred());
}

/* Logs (file, seek, fNbytes, fObjlen + fKeylen) of the basket uproot has
 * just parsed in the task's baskets: the chunk's byte accounting takes the
 * sizes from there instead of reading the TKey again. */
static int log_basket(TaskPhases *task, PyObject *basket)
{
    PyObject *members = PyObject_GetAttr(basket, str_members);
    PyObject *file = members ? PyObject_GetAttr(basket, str_file) : NULL;
    PyObject *cursor = file ? PyObject_GetAttr(basket, str_cursor) : NULL;
    PyObject *seek = cursor ? PyObject_GetAttr(cursor, str_index) : NULL;
    PyObject *nbytes = seek ? PyObject_GetItem(members, str_fNbytes) : NULL;
    PyObject *objlen = nbytes ? PyObject_GetItem(members, str_fObjlen) : NULL;
    PyObject *keylen = objlen ? PyObject_GetItem(members, str_fKeylen) : NULL;
    long long at = 0, size = 0, data = 0, key = 0, full = 0;
    bool ok = true;
    read_long_long(seek, &at, &ok);
    read_long_long(nbytes, &size, &ok);
    read_long_long(objlen, &data, &ok);
    read_long_long(keylen, &key, &ok);
    if (ok && __builtin_add_overflow(data, key, &full)) {
        PyErr_SetString(PyExc_OverflowError, "fObjlen + fKeylen");
        ok = false;
    }
    int rc = ok ? basket_log_add(&task->baskets, file, at, size, full) : -1;
    Py_XDECREF(keylen);
    Py_XDECREF(objlen);
    Py_XDECREF(nbytes);
    Py_XDECREF(seek);
    Py_XDECREF(cursor);
    Py_XDECREF(file);
    Py_XDECREF(members);
    return rc;
}

static PyObject *basket_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    PyObject *result = PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
    TaskPhases *task = thread_task;
    if (!task || !result || PyVectorcall_NARGS(nargsf) < 1)
        return result;
    Py_INCREF(task); /* reading the basket's attributes may run Python code */
    if (log_basket(task, args[0]) < 0) { /* unlogged: the accounting reads its TKey */
        PyErr_Clear();
        task->errors++;
    }
    Py_DECREF(task);
    return result;
}

/* Whether a get from queue (a queue.Queue) will wait: nothing is queued.
 * uproot's reader is its queue's only consumer, so a chunk queued now is
 * still there when the get runs. A queue whose items cannot be counted is
 * taken to wait (an error counted). */
static bool queue_waits(PhaseHook *hook, TaskPhases *task, PyObject *queue)
{
    (void)hook;
    PyObject *items = PyObject_GetAttr(queue, str_queue);
    Py_ssize_t n = items ? PyObject_Length(items) : -1;
    Py_XDECREF(items);
    if (n < 0) {
        PyErr_Clear();
        task->errors++;
    }
    return n <= 0;
}

/* The phase a queue wait that got item is charged to: that of the first of the
 * hook's ended_by types item is an instance of, else the hook's own. */
static int phase_ended_by(const hook_spec *spec, PyObject *item)
{
    for (int i = 0; i < spec->ended; i++)
        if (PyObject_TypeCheck(item, spec->ended_types[i]))
            return spec->ended_phases[i];
    return spec->phase;
}

static PyObject *queue_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task || task->clock.opaque || PyVectorcall_NARGS(nargsf) < 1)
        return hook_pass(hook, task, args, nargsf, kwnames);
    Py_INCREF(task); /* counting the queue's items may run Python code */
    PyObject *result;
    if (!queue_waits(hook, task, args[0])) {
        result = hook_pass(hook, task, args, nargsf, kwnames);
    } else {
        task_enter(task, hook->spec.phase, hook->spec.opaque, true);
        result = PyObject_Vectorcall(hook->spec.func, args, nargsf, kwnames);
        task_leave_as(task, result ? phase_ended_by(&hook->spec, result) : hook->spec.phase);
    }
    Py_DECREF(task);
    return result;
}

static vectorcallfunc call_of(const hook_spec *spec)
{
    if (spec->queue)
        return queue_call;
    if (spec->unmaterialized)
        return materialize_call;
    if (spec->chunk)
        return wait_call;
    if (spec->basket)
        return basket_call;
    return spec->codec >= 0 ? codec_call : hook_call;
}

static PyObject *hook_alloc(PyTypeObject *type, const hook_spec *spec)
{
    PhaseHook *hook = (PhaseHook *)type->tp_alloc(type, 0);
    if (!hook)
        return NULL;
    hook->spec = *spec;
    Py_INCREF(spec->func);
    Py_XINCREF(spec->unmaterialized);
    Py_XINCREF(spec->chunk);
    for (int i = 0; i < spec->ended; i++)
        Py_INCREF(spec->ended_types[i]);
    hook->vectorcall = call_of(spec);
    return (PyObject *)hook;
}

/* ended_by, ((type, phase), ...), into spec (borrowed types: hook_alloc takes
 * references); -1 with TypeError or ValueError. */
static int parse_ended_by(PyObject *ended_by, hook_spec *spec)
{
    Py_ssize_t n = PyTuple_GET_SIZE(ended_by);
    if (n > MAX_ENDED_BY) {
        PyErr_Format(PyExc_ValueError, "ended_by: %d pairs at most", MAX_ENDED_BY);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(ended_by, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyType_Check(PyTuple_GET_ITEM(pair, 0))) {
            PyErr_SetString(PyExc_TypeError, "ended_by: a tuple of (type, phase) pairs");
            return -1;
        }
        int phase = phase_index(PyTuple_GET_ITEM(pair, 1));
        if (phase < 0)
            return -1;
        spec->ended_types[i] = (PyTypeObject *)PyTuple_GET_ITEM(pair, 0);
        spec->ended_phases[i] = phase;
    }
    spec->ended = (int)n;
    return 0;
}

static PyObject *hook_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func",  "phase",  "opaque", "codec",    "unmaterialized",
                             "chunk", "basket", "queue",  "ended_by", NULL};
    PyObject *name, *codec = Py_None, *unmaterialized = Py_None, *chunk = Py_None;
    PyObject *ended_by = NULL;
    hook_spec spec = {.codec = -1};
    int opaque = 0, basket = 0, queue = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|pOOOppO!:PhaseHook", kwlist, &spec.func,
                                     &name, &opaque, &codec, &unmaterialized, &chunk, &basket,
                                     &queue, &PyTuple_Type, &ended_by))
        return NULL;
    if (ended_by && PyTuple_GET_SIZE(ended_by) && !queue) {
        PyErr_SetString(PyExc_TypeError, "ended_by is a queue hook's");
        return NULL;
    }
    if ((codec != Py_None) + (unmaterialized != Py_None) + (chunk != Py_None) + basket + queue >
        1) {
        PyErr_SetString(PyExc_TypeError,
                        "one of codec, unmaterialized, chunk, basket and queue at most");
        return NULL;
    }
    if (basket != (name == Py_None) || (basket && opaque)) {
        PyErr_SetString(PyExc_TypeError, "a basket hook, and only it, has no phase (None)");
        return NULL;
    }
    if (!PyCallable_Check(spec.func)) {
        PyErr_SetString(PyExc_TypeError, "func must be callable");
        return NULL;
    }
    if (chunk != Py_None && !PyType_Check(chunk)) {
        PyErr_SetString(PyExc_TypeError, "chunk must be a type");
        return NULL;
    }
    spec.phase = -1;
    if (!basket && (spec.phase = phase_index(name)) < 0)
        return NULL;
    if (codec != Py_None && (spec.codec = name_index(codec, codec_strs, ROAST_CODEC_COUNT, "codec")) < 0)
        return NULL;
    spec.opaque = opaque;
    spec.unmaterialized = unmaterialized == Py_None ? NULL : unmaterialized;
    spec.chunk = chunk == Py_None ? NULL : (PyTypeObject *)chunk;
    spec.basket = basket;
    spec.queue = queue;
    if (ended_by && parse_ended_by(ended_by, &spec) < 0)
        return NULL;
    return hook_alloc(type, &spec);
}

static int hook_traverse(PhaseHook *hook, visitproc visit, void *arg)
{
    Py_VISIT(hook->spec.func);
    Py_VISIT(hook->spec.unmaterialized);
    Py_VISIT(hook->spec.chunk);
    for (int i = 0; i < hook->spec.ended; i++)
        Py_VISIT(hook->spec.ended_types[i]);
    return 0;
}

static int hook_clear(PhaseHook *hook)
{
    Py_CLEAR(hook->spec.func);
    Py_CLEAR(hook->spec.unmaterialized);
    Py_CLEAR(hook->spec.chunk);
    for (int i = 0; i < hook->spec.ended; i++)
        Py_CLEAR(hook->spec.ended_types[i]);
    hook->spec.ended = 0;
    return 0;
}

static void hook_dealloc(PhaseHook *hook)
{
    PyObject_GC_UnTrack(hook);
    hook_clear(hook);
    Py_TYPE(hook)->tp_free((PyObject *)hook);
}

/* Bound like a function when it replaces a method. */
static PyObject *hook_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *hook_get_attr_of_func(PhaseHook *hook, void *name)
{
    return PyObject_GetAttrString(hook->spec.func, name);
}

static PyObject *hook_get_phase(PhaseHook *hook, void *closure)
{
    (void)closure;
    return Py_NewRef(hook->spec.phase >= 0 ? phase_strs[hook->spec.phase] : Py_None);
}

static PyObject *hook_get_codec(PhaseHook *hook, void *closure)
{
    (void)closure;
    return Py_NewRef(hook->spec.codec >= 0 ? codec_strs[hook->spec.codec] : Py_None);
}

/* ((type, phase), ...) of a queue hook's ended_by, a new tuple. */
static PyObject *hook_get_ended_by(PhaseHook *hook, void *closure)
{
    (void)closure;
    const hook_spec *spec = &hook->spec;
    PyObject *pairs = PyTuple_New(spec->ended);
    for (int i = 0; pairs && i < spec->ended; i++) {
        PyObject *pair = Py_BuildValue("(OO)", (PyObject *)spec->ended_types[i],
                                       phase_strs[spec->ended_phases[i]]);
        if (!pair)
            Py_CLEAR(pairs);
        else
            PyTuple_SET_ITEM(pairs, i, pair);
    }
    return pairs;
}

static PyObject *or_none(PyObject *obj)
{
    return obj ? obj : Py_None;
}

static PyObject *hook_repr(PhaseHook *hook)
{
    const hook_spec *spec = &hook->spec;
    const char *codec = spec->codec >= 0 ? codec_names[spec->codec] : NULL;
    return PyUnicode_FromFormat("<PhaseHook %s%s%s%s%s%s of %R>",
                                spec->basket ? "basket log" : phase_names[spec->phase],
                                spec->opaque ? " (opaque)" : "", spec->queue ? " queue" : "",
                                spec->unmaterialized ? " materialize" : "",
                                codec ? " codec " : "", codec ? codec : "", spec->func);
}

/* Pickled as its parts: a hooked function may be pickled by reference
 * (cloudpickle of a processor that names uproot.open) while it is hooked. */
static PyObject *hook_reduce(PhaseHook *hook, PyObject *unused)
{
    (void)unused;
    const hook_spec *spec = &hook->spec;
    PyObject *ended_by = hook_get_ended_by(hook, NULL);
    if (!ended_by)
        return NULL;
    return Py_BuildValue("O(OOOOOOOON)", Py_TYPE(hook), spec->func,
                         spec->phase >= 0 ? phase_strs[spec->phase] : Py_None,
                         spec->opaque ? Py_True : Py_False,
                         spec->codec >= 0 ? codec_strs[spec->codec] : Py_None,
                         or_none(spec->unmaterialized), or_none((PyObject *)spec->chunk),
                         spec->basket ? Py_True : Py_False, spec->queue ? Py_True : Py_False,
                         ended_by);
}

static PyMethodDef hook_methods[] = {
    {"__reduce__", (PyCFunction)hook_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hook_getset[] = {
    {"__name__", (getter)hook_get_attr_of_func, NULL, NULL, "__name__"},
    {"__qualname__", (getter)hook_get_attr_of_func, NULL, NULL, "__qualname__"},
    {"phase", (getter)hook_get_phase, NULL,
     "The phase its calls are charged to (None for a basket hook).", NULL},
    {"codec", (getter)hook_get_codec, NULL, "The codec whose totals its calls add to, or None.",
     NULL},
    {"ended_by", (getter)hook_get_ended_by, NULL,
     "A queue hook's ((type, phase), ...): a wait that got an instance of type is phase's.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef hook_members[] = {
    {"__wrapped__", T_OBJECT_EX, offsetof(PhaseHook, spec.func), READONLY, "The wrapped function."},
    {"unmaterialized", T_OBJECT, offsetof(PhaseHook, spec.unmaterialized), READONLY,
     "A materializing hook's sentinel (awkward's UNMATERIALIZED): only the building of an "
     "array whose _array is it is timed; or None."},
    {"chunk", T_OBJECT, offsetof(PhaseHook, spec.chunk), READONLY,
     "A chunk-wait hook's in-memory future type (uproot's TrivialFuture), or None."},
    {"basket", T_BOOL, offsetof(PhaseHook, spec.basket), READONLY,
     "Whether it is a basket hook (uproot's TBasket.read_members: the TKey sizes logged)."},
    {"queue", T_BOOL, offsetof(PhaseHook, spec.queue), READONLY,
     "Whether it is a queue hook (queue.Queue.get: a get from an empty queue may wait)."},
    {"opaque", T_BOOL, offsetof(PhaseHook, spec.opaque), READONLY,
     "Whether the phase is opaque: hooked calls inside it charge nothing of their own."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_PhaseHookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.PhaseHook",
    .tp_basicsize = sizeof(PhaseHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "PhaseHook(func, phase, opaque=False, codec=None, unmaterialized=None, "
              "chunk=None, basket=False, queue=False, ended_by=())\n--\n\n"
              "func, its time charged to phase when the calling thread runs a measured task.\nWith "
              "codec (one of CODECS), func is a codec's decompress(data, ...): each call's stretch, "
              "len(data) and len(result) are added to the task's codecs.\nWith unmaterialized "
              "(awkward's UNMATERIALIZED), func is awkward's VirtualNDArray.materialize: only "
              "the building of an array whose _array is it is timed.\n"
              "With chunk (uproot's TrivialFuture), func is uproot's Chunk.wait: only a wait for "
              "bytes from the source is timed (_raw_data None, and _future not a chunk instance "
              "unless _is_memmap), and its _stop - _start added to the task's read_bytes.\nWith "
              "basket (phase None), func is uproot's TBasket.read_members: the call is passed "
              "on and (file, seek, fNbytes, fObjlen + fKeylen) appended to the task's baskets.\n"
              "With queue, func is queue.Queue.get: only a get from an empty queue, a wait, is "
              "timed, and the thread's CPU clock is read as it starts; the wait is charged to "
              "the phase of the first (type, phase) pair of ended_by whose type what it got is "
              "an instance of, else to phase.",
    .tp_new = hook_new,
    .tp_dealloc = (destructor)hook_dealloc,
    .tp_traverse = (traverseproc)hook_traverse,
    .tp_clear = (inquiry)hook_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(PhaseHook, vectorcall),
    .tp_descr_get = hook_get,
    .tp_repr = (reprfunc)hook_repr,
    .tp_methods = hook_methods,
    .tp_getset = hook_getset,
    .tp_members = hook_members,
};

/* ---- module ----------------------------------------------------------------- */

/* Interns names into strs and exports them as the tuple attribute. */
static int add_names(PyObject *module, const char *attribute, const char *const *names,
                     PyObject **strs, int count)
{
    PyObject *tuple = PyTuple_New(count);
    if (!tuple)
        return -1;
    for (int i = 0; i < count; i++) {
        if (!strs[i] && !(strs[i] = PyUnicode_InternFromString(names[i]))) {
            Py_DECREF(tuple);
            return -1;
        }
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(strs[i]));
    }
    int rc = PyModule_AddObjectRef(module, attribute, tuple);
    Py_DECREF(tuple);
    return rc;
}

int roastpy_phases_init(PyObject *module)
{
    for (size_t i = 0; i < ATTR_NAMES; i++)
        if (!*attr_strs[i] && !(*attr_strs[i] = PyUnicode_InternFromString(attr_names[i])))
            return -1;
    if (add_names(module, "PHASES", phase_names, phase_strs, ROAST_PHASE_COUNT) < 0)
        return -1;
    return add_names(module, "CODECS", codec_names, codec_strs, ROAST_CODEC_COUNT);
}

void roastpy_phases_free(void)
{
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        Py_CLEAR(phase_strs[i]);
    for (int i = 0; i < ROAST_CODEC_COUNT; i++)
        Py_CLEAR(codec_strs[i]);
    for (size_t i = 0; i < ATTR_NAMES; i++)
        Py_CLEAR(*attr_strs[i]);
}
