package workloads

import (
	"slices"
	"testing"
)

// TestTaskTable: two schedulers that query before either enqueues get the
// same tasks (the duplicate the batch workload exists to show), a queued
// task is pending no more, and the table keeps only what is pending however
// many tasks went through it.
func TestTaskTable(t *testing.T) {
	tt := NewTaskTable()
	a, b := tt.Pending("k", 3), tt.Pending("k", 3)
	if !slices.Equal(a, []int64{1, 2, 3}) || !slices.Equal(a, b) {
		t.Fatalf("two queries before any enqueue: %v and %v, want [1 2 3] twice", a, b)
	}
	for i, id := range a {
		if pos := tt.Enqueue("k", id); pos != int64(i+1) {
			t.Fatalf("enqueue %d at %d, want %d", id, pos, i+1)
		}
	}
	if pos := tt.Enqueue("k", 2); pos != 4 {
		t.Fatalf("a task queued again is queued all the same: at %d, want 4", pos)
	}
	if got := tt.Pending("k", 2); !slices.Equal(got, []int64{4, 5}) {
		t.Fatalf("after 1..3 were queued: %v, want [4 5]", got)
	}
	tt.Enqueue("k", 5)
	if got := tt.Pending("k", 2); !slices.Equal(got, []int64{4, 6}) {
		t.Fatalf("after 5 was queued: %v, want [4 6]", got)
	}
	if got := tt.Pending("other", 1); !slices.Equal(got, []int64{1}) {
		t.Fatalf("another key starts at 1: %v", got)
	}
	for range 100000 {
		for _, id := range tt.Pending("k", 3) {
			tt.Enqueue("k", id)
		}
	}
	if n := len(tt.keys["k"].pending); n > 3 {
		t.Errorf("the table keeps %d pending tasks of k after 300k went through, want at most 3", n)
	}
}
