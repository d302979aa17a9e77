package fair

// Ring is the owners with work waiting, in the order they take turns:
// each is served one piece of work in its turn, and leaves the ring when
// it has no more. Its zero value is an empty ring. It is not safe for
// concurrent use: its owner's lock guards it.
type Ring[T comparable] struct {
	items []T
	// next is the index of the owner whose turn is next.
	next int
}

// Len is how many owners are in the ring.
func (r *Ring[T]) Len() int { return len(r.items) }

// Join puts x at the end of the turn order.
func (r *Ring[T]) Join(x T) { r.items = append(r.items, x) }

// At is the owner at index i.
func (r *Ring[T]) At(i int) T { return r.items[i] }

// Find is the index of the first owner, from the one whose turn is next
// and around, for which ok holds; -1 when there is none.
func (r *Ring[T]) Find(ok func(T) bool) int {
	n := len(r.items)
	for k, i := 0, r.next%max(n, 1); k < n; k, i = k+1, (i+1)%n {
		if ok(r.items[i]) {
			return i
		}
	}
	return -1
}

// Served ends the turn of the owner at index i: the turn goes to the one
// after it, and the owner leaves the ring when done (it has no more work).
func (r *Ring[T]) Served(i int, done bool) {
	if done {
		r.leave(i)
		r.next = i // the one after it moved into its place
		return
	}
	r.next = i + 1
}

// Remove takes x out of the ring, wherever it is; false when it was not in.
func (r *Ring[T]) Remove(x T) bool {
	for i, o := range r.items {
		if o == x {
			r.leave(i)
			return true
		}
	}
	return false
}

func (r *Ring[T]) leave(i int) {
	var zero T
	copy(r.items[i:], r.items[i+1:])
	r.items[len(r.items)-1] = zero
	r.items = r.items[:len(r.items)-1]
	if r.next > i {
		r.next--
	}
}
