package fair

import "testing"

// TestRing: turns go round from the one after the last served; an owner
// that leaves, served or removed, keeps the turn order of the others.
func TestRing(t *testing.T) {
	var r Ring[string]
	for _, x := range []string{"a", "b", "c"} {
		r.Join(x)
	}
	every := func(string) bool { return true }
	steps := []struct {
		done bool
		want string
	}{
		{false, "a"}, {true, "b"}, {false, "c"}, {false, "a"}, {true, "c"}, {false, "a"}, {true, "a"},
	}
	for k, st := range steps {
		i := r.Find(every)
		if i < 0 || r.At(i) != st.want {
			t.Fatalf("step %d: turn of %v, want %s", k, i, st.want)
		}
		r.Served(i, st.done)
	}
	if r.Len() != 0 || r.Find(every) != -1 {
		t.Fatalf("%d left", r.Len())
	}
	r.Join("x")
	r.Join("y")
	r.Join("z")
	r.Served(r.Find(every), false) // x served; y next
	if !r.Remove("x") || r.Remove("w") {
		t.Fatal("Remove")
	}
	if got := r.At(r.Find(every)); got != "y" {
		t.Errorf("after x left, the turn is %s's, want y's", got)
	}
	if got := r.At(r.Find(func(s string) bool { return s == "z" })); got != "z" {
		t.Errorf("Find with a test: %s", got)
	}
}
