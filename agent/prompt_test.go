package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
)

// TestPromptStyles: both wordings carry the task, the terminal and the
// reply schema; the compact one is a fraction of terminus-2's length; and
// a policy that reads terminus-2's section headers (the built-in one)
// gives the same replies under both.
func TestPromptStyles(t *testing.T) {
	const instr = "Count the number of lines in `/app/data/app.log` and write it to `/output/result.txt`."
	const term = "root@sandbox:/app# "
	var replies []string
	lengths := map[agent.PromptStyle]int{}
	for _, style := range []agent.PromptStyle{agent.PromptTerminus, agent.PromptCompact} {
		first := style.First(instr+"\n", term)
		lengths[style] = len(first) - len(instr) - len(term)
		for _, want := range []string{instr, term, `"keystrokes"`, `"task_complete"`, `"analysis"`, `"plan"`, `"commands"`} {
			if !strings.Contains(first, want) {
				t.Errorf("%s: the first prompt lacks %q:\n%s", style, want, first)
			}
		}
		p := builtin.New(1)
		msgs := []policy.Message{{Role: policy.RoleUser, Content: first}}
		c1, err := p.Complete(context.Background(), policy.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, policy.Message{Role: policy.RoleAssistant, Content: c1.Content},
			policy.Message{Role: policy.RoleUser, Content: style.Confirm(term)})
		c2, err := p.Complete(context.Background(), policy.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c2.Content, `"task_complete":true`) {
			t.Errorf("%s: the confirmation was not understood: %s", style, c2.Content)
		}
		replies = append(replies, c1.Content+"\n"+c2.Content)
	}
	if replies[0] != replies[1] {
		t.Errorf("the built-in policy answers the two styles differently:\n%s\n---\n%s", replies[0], replies[1])
	}
	if lengths[agent.PromptCompact]*5 > lengths[agent.PromptTerminus] {
		t.Errorf("protocol text: compact %d bytes, terminus %d: the compact prompt should be a fifth or less", lengths[agent.PromptCompact], lengths[agent.PromptTerminus])
	}
	t.Logf("protocol text: terminus %d bytes, compact %d", lengths[agent.PromptTerminus], lengths[agent.PromptCompact])
	if _, err := agent.ParsePromptStyle("verbose"); err == nil {
		t.Error("an unknown prompt style parsed")
	}
}
