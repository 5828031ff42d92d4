// cf_firing_pool.c — the firing pool. See cf_firing_pool.h for the essay.
#include "cf_firing_pool.h"

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
    size_t len;
    item items[CHUNK_ITEMS];
} chunk;

// ---- the driver's own: items not yet handed over -------------------------
static chunk *_Nullable pending_head, *_Nullable pending_tail;
static size_t pending_groups;
static int open_group;       // items added since the last group end

// ---- shared, under `lock` -------------------------------------------------
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static chunk *_Nullable queue_head, *_Nullable queue_tail;
static size_t queue_pos;     // the next item to take in queue_head
static size_t queue_groups;  // groups handed over, not yet taken
static int idle;             // threads waiting for work
static int started;          // threads started

int cf_firing_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 2 ? 2 : cores > 64 ? 64 : (int)cores;
}

__thread int cf_firing_serving;

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
        chunk *c = malloc(sizeof(chunk));
        if (c == NULL) { fputs("CollapsingFutures: out of memory in the firing pool\n", stderr); abort(); }
        c->next = NULL;
        c->len = 0;
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
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int failed = pthread_create(&thread, &attr, serve, NULL);
    pthread_attr_destroy(&attr);
    if (failed) {
        // No thread to run what timers hand over: say so.
        fprintf(stderr, "CollapsingFutures: cannot start a timer firing thread (pthread_create: %s)\n",
                strerror(failed));
        abort();
    }
}

// Under `lock`: whether a thread should be started now (groups wait, none
// is idle, and the pool may grow); counts it as started.
static int needs_thread(void) {
    if (queue_groups == 0 || idle > 0 || started >= cf_firing_threads()) return 0;
    started++;
    return 1;
}

void cf_firing_publish(void) {
    cf_firing_end_group();
    if (pending_groups == 0) return;
    size_t groups = pending_groups;
    pthread_mutex_lock(&lock);
    if (queue_tail) queue_tail->next = pending_head; else { queue_head = pending_head; queue_pos = 0; }
    queue_tail = pending_tail;
    queue_groups += groups;
    // Wake the idle threads the new groups need; start one more thread
    // when every started one is busy.
    int wake = idle;
    if ((size_t)wake > groups) wake = (int)groups;
    int start = needs_thread();
    pthread_mutex_unlock(&lock);
    pending_head = pending_tail = NULL;
    pending_groups = 0;
    if (wake == 1) pthread_cond_signal(&work); else if (wake > 1) pthread_cond_broadcast(&work);
    if (start) start_thread();
}

// The items of the running group still to run after the running one (this
// thread's; cf_firing_waiting_behind).
static __thread size_t behind;

size_t cf_firing_waiting_behind(void) { return behind; }

// A pool thread: takes one group at a time (so a handler that blocks holds
// back only the rest of its own group, and the others go to other
// threads), runs it in order. A thread that takes a group while others
// still wait and no thread is idle starts one more (up to the bound).
static void *_Nullable serve(void *_Nullable unused) {
    (void)unused;
    cf_firing_serving = 1;
    item *taken = NULL;
    size_t capacity = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (queue_groups == 0) {
            idle++;
            pthread_cond_wait(&work, &lock);
            idle--;
        }
        size_t n = 0;
        chunk *done = NULL;
        for (;;) {
            if (n == capacity) {
                capacity = capacity ? capacity * 2 : 256;
                taken = realloc(taken, capacity * sizeof(item));
                if (taken == NULL) { fputs("CollapsingFutures: out of memory in the firing pool\n", stderr); abort(); }
            }
            item it = queue_head->items[queue_pos++];
            taken[n++] = it;
            if (queue_pos == queue_head->len) {
                chunk *c = queue_head;
                queue_head = c->next;
                if (queue_head == NULL) queue_tail = NULL;
                queue_pos = 0;
                c->next = done;
                done = c;
            }
            if ((uintptr_t)it.node & GROUP_END) break;
        }
        queue_groups--;
        int start = needs_thread();
        pthread_mutex_unlock(&lock);
        if (start) start_thread();
        while (done) { chunk *c = done; done = c->next; free(c); }
        for (size_t i = 0; i < n; i++) {
            behind = n - 1 - i;
            cf_swift_firing_run((cf_node *)((uintptr_t)taken[i].node & ~GROUP_END), taken[i].unless);
        }
        behind = 0;
    }
    return NULL;
}
