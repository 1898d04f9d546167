package filters

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/pipeline"
)

// synthPool builds near_dup's sketches directly from shingle sets: random
// shingles, a template of instruction and test shingles every task holds.
type synthPool struct {
	r          *rand.Rand
	tplI, tplT []uint32
	nd         *NearDup
	tasks      []*pipeline.Task
}

func newSynthPool(t *testing.T, seed uint64, tplI, tplT int) *synthPool {
	nd, err := NewNearDup(0)
	if err != nil {
		t.Fatal(err)
	}
	p := &synthPool{r: rand.New(rand.NewPCG(seed, seed+1)), nd: nd}
	p.tplI, p.tplT = p.set(tplI), p.set(tplT)
	return p
}

// set is n random shingles.
func (p *synthPool) set(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = p.r.Uint32()
	}
	return out
}

// add appends a task holding the template and shingles of its own.
func (p *synthPool) add(path string, instr, tests []uint32) {
	sorted := func(parts ...[]uint32) []uint32 {
		out := slices.Concat(parts...)
		slices.Sort(out)
		return slices.Compact(out)
	}
	tk := &pipeline.Task{Index: int64(len(p.tasks)), Path: path}
	p.tasks = append(p.tasks, tk)
	i, ts := sorted(p.tplI, instr), sorted(p.tplT, tests)
	p.nd.store.add(tk, i, ts)
}

// TestNearDupBucketsWithoutTemplate: when a template is nearly all of
// every instruction (1,000 shared shingles around 10 of a task's own), the
// signatures of the whole sets agree on nearly every bin, so each LSH band
// puts nearly the whole pool in one bucket and the scan of maxBucketScan
// entries back from a copy at the end of the pool stops short of its
// original. Signed without the boilerplate, the buckets hold what tasks do
// not share and every copy finds its original.
func TestNearDupBucketsWithoutTemplate(t *testing.T) {
	p := newSynthPool(t, 5, 1000, 150)
	set, add := p.set, p.add
	const distinct, copies = 1000, 10
	own := map[int][2][]uint32{}
	for k := 0; k < distinct; k++ {
		instr, tests := set(10), set(30)
		if k < copies {
			own[k] = [2][]uint32{instr, tests}
		}
		add(fmt.Sprintf("task-%04d", k), instr, tests)
	}
	for k := 0; k < copies; k++ {
		// A light edit: one of its own instruction shingles and three of
		// its test shingles changed (own Jaccard 0.82 and 0.82).
		instr, tests := slices.Clone(own[k][0]), slices.Clone(own[k][1])
		instr[0] = p.r.Uint32()
		copy(tests, set(3))
		add(fmt.Sprintf("copy-of-%04d", k), instr, tests)
	}
	tasks := p.tasks
	outs, err := p.nd.Decide(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for i, o := range outs {
		path := tasks[i].Path
		if i < distinct && o.Verdict != pipeline.Keep {
			wrong = append(wrong, path+": "+o.Detail)
		}
		if i >= distinct && !strings.HasPrefix(o.Detail, "near-duplicate of task-"+path[len("copy-of-"):]+":") {
			wrong = append(wrong, fmt.Sprintf("%s: %s %s", path, o.Verdict, o.Detail))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d wrong outcomes:\n%s", len(wrong), strings.Join(wrong, "\n"))
	}
}

// TestNearDupTemplateOnlySections: what a section that is nothing but the
// pool's template means. Two tasks whose instructions are nothing but the
// template (and whose tests too) are kept: they have nothing of their own
// to compare, and dropping on that would fold a whole family of generic
// tasks into its first. Two tasks whose tests are nothing but the template
// (the harness alone) are judged on their instructions, as tasks without
// test text are: a copy of an instruction over the same bare harness is
// dropped.
func TestNearDupTemplateOnlySections(t *testing.T) {
	p := newSynthPool(t, 7, 200, 100)
	set, add := p.set, p.add
	for k := 0; k < 60; k++ {
		add(fmt.Sprintf("task-%02d", k), set(40), set(40))
	}
	add("template-only-a", nil, nil)
	add("template-only-b", nil, nil)
	own := set(40)
	add("harness-only-a", own, nil)
	edited := slices.Clone(own)
	copy(edited, set(4)) // own Jaccard 0.82
	add("harness-only-b", edited, nil)
	tasks := p.tasks
	outs, err := p.nd.Decide(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		want := "keep distinct"
		if tasks[i].Path == "harness-only-b" {
			want = "drop near_duplicate"
		}
		if got := string(o.Verdict) + " " + o.Reason; got != want {
			t.Errorf("%s: %s (%s), want %s", tasks[i].Path, got, o.Detail, want)
		}
	}
	if d := outs[len(outs)-1].Detail; !strings.HasPrefix(d, "near-duplicate of harness-only-a: Jaccard 0.82 on the instruction, 1.00 on the tests") ||
		!strings.Contains(d, "200 instruction and 100 test shingles held by more than 5% of the pool's tasks ignored") {
		t.Errorf("harness-only-b: %s", d)
	}
}

// TestNearDupBoilerplateCount: the boilerplate is exactly the shingles in
// more than 5% and more than 50 of the tasks: the template and a phrase of
// 60 tasks, not a family's phrase of 40, nor a task's own; counted in one
// pass for the instructions and in hash partitions for the tests (1,000
// tasks of about 2,150 test shingles exceed maxCountShingles).
func TestNearDupBoilerplateCount(t *testing.T) {
	p := newSynthPool(t, 9, 300, 100)
	family, sixty := p.set(30), p.set(25)
	for k := 0; k < 1000; k++ {
		instr, tests := p.set(20), p.set(2035)
		if k%25 == 0 { // 40 tasks
			instr = append(instr, family...)
		}
		if k%16 == 3 && k < 963 { // 60 tasks
			tests = append(tests, sixty...)
		}
		p.add(fmt.Sprintf("task-%04d", k), instr, tests)
	}
	s := p.nd.store
	if err := s.finish(); err != nil {
		t.Fatal(err)
	}
	defer s.release()
	var have []int32
	for _, tk := range p.tasks {
		have = append(have, s.idx[tk])
	}
	if total := 1000 * int(s.nT[0]); total <= maxCountShingles {
		t.Fatalf("%d test shingles fit in one pass", total)
	}
	bpI, bpT, err := s.boilerplate(have)
	if err != nil {
		t.Fatal(err)
	}
	sorted := func(parts ...[]uint32) []uint32 {
		out := slices.Concat(parts...)
		slices.Sort(out)
		return slices.Compact(out)
	}
	if want := sorted(p.tplI); !slices.Equal(bpI, want) {
		t.Errorf("instruction boilerplate: %d shingles, want the template's %d", len(bpI), len(want))
	}
	if want := sorted(p.tplT, sixty); !slices.Equal(bpT, want) {
		t.Errorf("tests boilerplate: %d shingles, want the template's and the 60 tasks' phrase, %d", len(bpT), len(want))
	}
}

// byKeyThenTask orders a band's entries by key, then pool order.
func byKeyThenTask(a, b entry) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// TestRadixEntries: the LSH bands' radix sort orders entries made in pool
// order as byKeyThenTask does, keys colliding or not.
func TestRadixEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 7, 1000, 70000} {
		es := make([]entry, n)
		for i := range es {
			es[i] = entry{r.Uint32() % uint32(max(n/3, 1)) * 0x10001, int32(i)} // repeats, high and low halves both used
		}
		want := slices.Clone(es)
		slices.SortFunc(want, byKeyThenTask)
		radixEntries(es, make([]entry, n))
		if !slices.Equal(es, want) {
			t.Errorf("%d entries: radix order differs from byKeyThenTask", n)
		}
	}
}

// TestSortPosts: decontam's table sort orders by hash and keeps each hash's
// tasks in the order they were added (the first is the first holder).
func TestSortPosts(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, 5, 3000} {
		ps := make([]postRow, n)
		for i := range ps {
			ps[i] = postRow{r.Uint64() % uint64(max(n/4, 1)) * 0x0001000100010001, int32(i)}
		}
		want := slices.Clone(ps)
		slices.SortStableFunc(want, func(a, b postRow) int { return cmp.Compare(a.g, b.g) })
		sortPosts(ps, make([]postRow, n))
		if !slices.Equal(ps, want) {
			t.Errorf("%d rows: radix order differs from a stable sort by hash", n)
		}
	}
}
