// cf_firing_pool.c — the firing pool. See cf_firing_pool.h for the essay.
#include "cf_firing_pool.h"
#include "cf_upcalls.h"
#include "cf_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The last item of a group carries this bit in its node pointer (nodes are
// 16-byte aligned).
#define GROUP_END ((uintptr_t)1)
enum { CHUNK_ITEMS = 510 };

typedef struct item {
    cf_node *node;                 // | GROUP_END on a group's last item
    void *_Nullable unless;
} item;

typedef struct chunk {
    struct chunk *_Nullable next;
    size_t pos, len;               // items [pos, len) are still to take
    item items[CHUNK_ITEMS];
} chunk;

static chunk *new_chunk(void) {
    chunk *c = malloc(sizeof(chunk));
    if (c == NULL) { fputs("CollapsingFutures: out of memory in the firing pool\n", stderr); abort(); }
    c->next = NULL;
    c->pos = c->len = 0;
    return c;
}

// ---- each driver thread's own: items not yet handed over -----------------
static __thread chunk *_Nullable pending_head, *_Nullable pending_tail;
static __thread size_t pending_groups;
static __thread int open_group;   // items added since the last group end

// ---- shared, under `lock` -------------------------------------------------
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static chunk *_Nullable queue_head, *_Nullable queue_tail;
static size_t queue_groups;  // groups handed over, not yet taken
static int idle;             // threads waiting for work
static int started;          // threads started

// ---- each pool thread's own: the batch it took ---------------------------
__thread int cf_firing_serving;
static __thread item *_Nullable batch;
static __thread size_t batch_capacity, batch_next, batch_len, group_end;

int cf_firing_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 2 ? 2 : cores > 64 ? 64 : (int)cores;
}

size_t cf_firing_queued(void) {
    pthread_mutex_lock(&lock);
    size_t n = queue_groups;
    pthread_mutex_unlock(&lock);
    return n;
}

int cf_firing_debug_started(void) {
    pthread_mutex_lock(&lock);
    int n = started;
    pthread_mutex_unlock(&lock);
    return n;
}

void cf_firing_add(cf_node *node, void *_Nullable unless) {
    if (pending_tail == NULL || pending_tail->len == CHUNK_ITEMS) {
        chunk *c = new_chunk();
        if (pending_tail) pending_tail->next = c; else pending_head = c;
        pending_tail = c;
    }
    pending_tail->items[pending_tail->len++] = (item){node, unless};
    open_group = 1;
}

void cf_firing_end_group(void) {
    if (!open_group) return;
    item *last = &pending_tail->items[pending_tail->len - 1];
    last->node = (cf_node *)((uintptr_t)last->node | GROUP_END);
    open_group = 0;
    pending_groups++;
}

static void *_Nullable serve(void *_Nullable unused);

static void start_thread(void) {
    // No thread to run what timers hand over: say so.
    int error = cf_start_thread(serve, NULL);
    if (error) cf_thread_start_failed("a timer firing thread", error);
}

// Under `lock`, after groups were queued: wakes the idle threads they
// need, or, when none is idle, starts one more (up to the bound). Returns
// whether to start a thread (the caller does, after unlocking).
static int wake_or_grow(size_t groups) {
    if (groups == 0) return 0;
    if (idle > 0) {
        if (groups == 1 || idle == 1) pthread_cond_signal(&work); else pthread_cond_broadcast(&work);
        return 0;
    }
    if (started >= cf_firing_threads()) return 0;
    started++;
    return 1;
}

void cf_firing_publish(void) {
    cf_firing_end_group();
    if (pending_groups == 0) return;
    pthread_mutex_lock(&lock);
    if (queue_tail) queue_tail->next = pending_head; else queue_head = pending_head;
    queue_tail = pending_tail;
    queue_groups += pending_groups;
    int start = wake_or_grow(pending_groups);
    pthread_mutex_unlock(&lock);
    pending_head = pending_tail = NULL;
    pending_groups = 0;
    if (start) start_thread();
}

size_t cf_firing_waiting_behind(void) {
    return cf_firing_serving && batch_next < batch_len ? group_end - (batch_next - 1) : 0;
}

void cf_firing_blocking(void) {
    // The groups of this thread's batch after the running one go back to
    // the front of the queue, in order, for other threads.
    if (!cf_firing_serving || group_end + 1 >= batch_len) return;
    size_t from = group_end + 1, groups = 0;
    chunk *first = NULL, *last = NULL;
    for (size_t i = from; i < batch_len; i++) {
        if (last == NULL || last->len == CHUNK_ITEMS) {
            chunk *c = new_chunk();
            if (last) last->next = c; else first = c;
            last = c;
        }
        last->items[last->len++] = batch[i];
        if ((uintptr_t)batch[i].node & GROUP_END) groups++;
    }
    batch_len = from;
    pthread_mutex_lock(&lock);
    last->next = queue_head;
    queue_head = first;
    if (queue_tail == NULL) queue_tail = last;
    queue_groups += groups;
    int start = wake_or_grow(groups);
    pthread_mutex_unlock(&lock);
    if (start) start_thread();
}

// A pool thread: takes a batch of groups (more when many wait, so that a
// burst takes the lock once per many; one when few wait, so that
// handlers that block spread over the threads), runs it in order. When it
// leaves groups waiting and no thread is idle, it starts one more (up to
// the bound). A handler that blocks in Future.wait() hands the rest of the
// batch back first (cf_firing_blocking).
static void *_Nullable serve(void *_Nullable unused) {
    (void)unused;
    cf_firing_serving = 1;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (queue_groups == 0) {
            idle++;
            pthread_cond_wait(&work, &lock);
            idle--;
        }
        size_t want = queue_groups / (2 * (size_t)started);
        if (want < 1) want = 1;
        if (want > 64) want = 64;
        queue_groups -= want;
        size_t n = 0;
        chunk *done = NULL;
        while (want > 0) {
            if (n == batch_capacity) {
                batch_capacity = batch_capacity ? batch_capacity * 2 : 256;
                batch = realloc(batch, batch_capacity * sizeof(item));
                if (batch == NULL) { fputs("CollapsingFutures: out of memory in the firing pool\n", stderr); abort(); }
            }
            item it = queue_head->items[queue_head->pos++];
            batch[n++] = it;
            if ((uintptr_t)it.node & GROUP_END) want--;
            if (queue_head->pos == queue_head->len) {
                chunk *c = queue_head;
                queue_head = c->next;
                if (queue_head == NULL) queue_tail = NULL;
                c->next = done;
                done = c;
            }
        }
        // Groups left waiting and no thread idle (an idle one was woken when
        // they came): one more starts, up to the bound.
        int start = 0;
        if (queue_groups > 0 && idle == 0 && started < cf_firing_threads()) { started++; start = 1; }
        pthread_mutex_unlock(&lock);
        if (start) start_thread();
        while (done) { chunk *c = done; done = c->next; free(c); }
        batch_len = n;
        group_end = 0;
        for (batch_next = 0; batch_next < batch_len;) {
            size_t i = batch_next++;
            if (i == 0 || i > group_end) {
                group_end = i;
                while (!((uintptr_t)batch[group_end].node & GROUP_END)) group_end++;
            }
            cf_upcalls_in_use->firing_run((cf_node *)((uintptr_t)batch[i].node & ~GROUP_END), batch[i].unless);
        }
        batch_len = batch_next = group_end = 0;
    }
    return NULL;
}
