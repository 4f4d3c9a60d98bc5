package report

import "sort"

// lanes lays key k's holds and marks out in lanes, one client after
// another, and returns the holds placed.
func (b *modelBuilder) lanes(k string, km *keyModel, holdsOf map[clientKey][]*hold) []*hold {
	clients := map[int]bool{}
	for c := 0; c < b.m.Clients && c < maxLaneClients; c++ {
		clients[c] = true
	}
	for ck := range holdsOf {
		if ck.key == k {
			clients[ck.client] = true
		}
	}
	for ck := range b.busy {
		if ck.key == k {
			clients[ck.client] = true
		}
	}
	for ck := range b.marksOf {
		if ck.key == k {
			clients[ck.client] = true
		}
	}
	for _, c := range sortedInts(clients) {
		ck := clientKey{k, c}
		if bc := b.busy[ck]; bc != nil {
			km.Lanes = append(km.Lanes, bc.finish(c, b.marksOf[ck])...)
			continue
		}
		hs := make([]hold, len(holdsOf[ck]))
		for i, hd := range holdsOf[ck] {
			hs[i] = *hd
		}
		km.Lanes = append(km.Lanes, packLanes(c, hs, b.marksOf[ck])...)
	}
	km.Holds = b.ext.holds[k]
	if !b.ext.busy(k) {
		km.Holds = 0
		for _, l := range km.Lanes {
			km.Holds += len(l.Holds)
		}
	}
	var all []*hold
	for _, l := range km.Lanes {
		for i := range l.Holds {
			all = append(all, &l.Holds[i])
		}
	}
	return all
}

// maxLaneClients bounds the lanes made for clients that never touched a key.
const maxLaneClients = 64

// packLanes gives a client's holds sub-lanes so that none overlap: the
// first fits in sub-lane 0, a hold that overlaps (a later process of the
// same client after an unknown outcome) opens the next.
func packLanes(client int, holds []hold, marks []mark) []*lane {
	sort.Slice(holds, func(i, j int) bool { return holds[i].From < holds[j].From })
	lanes := []*lane{{Client: client}}
	var ends []int64
	subOf := map[int]int{}
	for _, hd := range holds {
		s := -1
		for i, end := range ends {
			if end <= hd.From {
				s = i
				break
			}
		}
		if s < 0 {
			s = len(ends)
			ends = append(ends, 0)
			if s > 0 {
				lanes = append(lanes, &lane{Client: client, Sub: s})
			}
		}
		ends[s] = hd.To
		if _, ok := subOf[hd.Process]; !ok {
			subOf[hd.Process] = s
			lanes[s].Processes = append(lanes[s].Processes, hd.Process)
		}
		lanes[s].Holds = append(lanes[s].Holds, hd)
	}
	for _, mk := range marks {
		s := subOf[mk.Process]
		lanes[s].Marks = append(lanes[s].Marks, mk)
	}
	return lanes
}

func sortedInts(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}
