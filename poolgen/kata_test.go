package poolgen

import (
	"context"
	"strings"
	"testing"
)

func TestKataFamiliesStatic(t *testing.T) {
	if len(kataFamilies) < 30 {
		t.Fatalf("%d kata families, want >= 30", len(kataFamilies))
	}
	ids := map[string]bool{}
	for _, f := range kataFamilies {
		if ids[f.ID] {
			t.Errorf("duplicate family %s", f.ID)
		}
		ids[f.ID] = true
		if len(f.Variants) < 2 {
			t.Errorf("%s: %d variants, want >= 2", f.ID, len(f.Variants))
		}
		for v, vv := range f.Variants {
			ref := vv.expand(f.ref(v))
			wrong := vv.expand(f.wrong(v))
			if !strings.HasPrefix(ref, "def "+vv.Fn+"(") {
				t.Errorf("%s/v%d: reference does not start with the signature: %q", f.ID, v+1, ref[:min(40, len(ref))])
			}
			if wrong == ref {
				t.Errorf("%s/v%d: the wrong implementation equals the reference (mutation not found?)", f.ID, v+1)
			}
			if strings.Contains(ref+wrong+vv.expand(vv.Spec), "$") {
				t.Errorf("%s/v%d: unexpanded placeholder", f.ID, v+1)
			}
			if vv.Summary == "" || vv.Spec == "" {
				t.Errorf("%s/v%d: missing wording", f.ID, v+1)
			}
		}
	}
}

// TestAllKataVariants builds tasks for every family variant (with the
// wrong oracle computed) and checks, in one python3 process without
// pytest: the oracle passes the tests, a missing or stub solution fails,
// the wrong oracle fails. Expected values come from the batch, so this also
// checks that the test file's literals round-trip through repr.
func TestAllKataVariants(t *testing.T) {
	t.Parallel()
	req := &batchRequest{Codes: map[string]string{}}
	var plans []*kataPlan
	for fi, f := range kataFamilies {
		for v := range f.Variants {
			for seed := 0; seed < 3; seed++ {
				r := taskRand(int64(seed), fi*10+v, 3)
				plans = append(plans, planKataVariant(r, f, v, "t", true))
				plans[len(plans)-1].job(req)
			}
		}
	}
	resp, err := runBatch(context.Background(), "python3", req)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []checkJob
	type want struct {
		name string
		pass bool
	}
	var wants []want
	fallbacks := 0
	for i, p := range plans {
		kb, err := p.build(&resp.Kata[i])
		if err != nil {
			t.Fatal(err)
		}
		if n := len(kb.tests); n < 5 || n > 10 {
			t.Errorf("%s: %d tests", p.template(), n)
		}
		test := kb.d.tests["test_solution.py"]
		ref := p.refCode()
		fn := p.variant().Fn
		stub := "def " + fn + "(*args, **kwargs):\n    return None\n"
		jobs = append(jobs,
			checkJob{test, strp(ref)}, checkJob{test, nil}, checkJob{test, strp(stub)}, checkJob{test, strp(kb.wrongSrc)})
		wants = append(wants, want{p.template() + " oracle", true}, want{p.template() + " no solution", false},
			want{p.template() + " stub", false}, want{p.template() + " wrong oracle (" + kb.wrongMode + ")", false})
		if kb.wrongMode == "fallback" {
			fallbacks++
			t.Logf("%s: fallback wrong oracle", p.template())
		}
		// The instruction shows at most two examples, never every test.
		shown := 0
		for _, tc := range kb.tests {
			if strings.Contains(kb.d.instruction, fn+"("+tc.args+")") {
				shown++
			}
		}
		if shown > 2 {
			t.Errorf("%s: instruction shows %d test calls", p.template(), shown)
		}
	}
	res := runChecker(t, jobs)
	for i, r := range res {
		if r.Passed != wants[i].pass {
			t.Errorf("%s: passed=%v (%s)", wants[i].name, r.Passed, r.Error)
		}
	}
	t.Logf("%d tasks, %d wrong oracles needed the fallback", len(plans), fallbacks)
	if fallbacks*10 > len(plans) {
		t.Errorf("fallback wrong oracle used %d times out of %d", fallbacks, len(plans))
	}
}

// TestKataScriptsOnHost runs solve.sh and test.sh themselves (pytest
// replaced by a shim) for each verifier style and both oracle styles.
func TestKataScriptsOnHost(t *testing.T) {
	t.Parallel()
	req := &batchRequest{Codes: map[string]string{}}
	var plans []*kataPlan
	for i := 0; i < 6; i++ {
		f := kataFamilies[(i*7)%len(kataFamilies)]
		p := planKataVariant(taskRand(5, i, 1), f, i%len(f.Variants), "t", false)
		p.verStyle, p.oracleFile = i%3, i >= 3
		p.job(req)
		plans = append(plans, p)
	}
	resp, err := runBatch(context.Background(), "python3", req)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for i, p := range plans {
		kb, err := p.build(&resp.Kata[i])
		if err != nil {
			t.Fatal(err)
		}
		tk := Task{Path: p.template(), Entries: kb.d.entries()}
		if err := hostCheck(context.Background(), tmp, "python3", tk); err != nil {
			t.Error(err)
		}
	}
}
