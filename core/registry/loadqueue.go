package registry

import "sync"

// loadQueue is the loaders' queue: one first-in-first-out queue per
// tenant, served round-robin by tenant, with at most perTenant loads of
// one tenant running at once. A tenant that queues many slow loads holds
// at most perTenant loaders (there is always one left for the others, with
// two loaders or more), and another tenant's new group is next in turn
// rather than behind the whole queue (issue 25: behind one tenant's six
// 25 s imports, another's trivial group took 76 s to be Ready).
type loadQueue struct {
	mu        sync.Mutex
	cond      *sync.Cond
	byTenant  map[int64][]job
	ring      []int64 // tenants with jobs queued, in turn order
	running   map[int64]int
	perTenant int
	closed    bool
}

// newLoadQueue is the queue of loaders loaders: a tenant may use all but
// one of them at once (all of one).
func newLoadQueue(loaders int) *loadQueue {
	q := &loadQueue{byTenant: map[int64][]job{}, running: map[int64]int{}, perTenant: max(1, loaders-1)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues a job at the end of its tenant's queue.
func (q *loadQueue) push(j job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.byTenant[j.tenant]) == 0 {
		q.ring = append(q.ring, j.tenant)
	}
	q.byTenant[j.tenant] = append(q.byTenant[j.tenant], j)
	q.cond.Signal()
}

// pop waits for the next job: the first of the first tenant in turn that
// runs fewer than perTenant loads; that tenant's turn then goes to the
// end. ok is false once the queue is closed.
func (q *loadQueue) pop() (j job, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.closed {
			return job{}, false
		}
		for i, t := range q.ring {
			if q.running[t] >= q.perTenant {
				continue
			}
			jobs := q.byTenant[t]
			j, q.byTenant[t] = jobs[0], jobs[1:]
			q.ring = append(q.ring[:i:i], q.ring[i+1:]...)
			if len(q.byTenant[t]) > 0 {
				q.ring = append(q.ring, t)
			} else {
				delete(q.byTenant, t)
			}
			q.running[t]++
			return j, true
		}
		q.cond.Wait()
	}
}

// done ends a load of tenant, which may let another of its jobs run.
func (q *loadQueue) done(tenant int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[tenant]--; q.running[tenant] <= 0 {
		delete(q.running, tenant)
	}
	q.cond.Broadcast()
}

// close wakes every loader to stop.
func (q *loadQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
