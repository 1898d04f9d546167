package daytona

import "testing"

func TestCommandLine(t *testing.T) {
	cases := []struct {
		words []string
		want  string
		err   bool
	}{
		{[]string{"/.h/h", "n", "read", "-path", "/logs/verifier/reward.txt"}, "/.h/h n read -path /logs/verifier/reward.txt", false},
		{[]string{"/.h/h", "-path", "/a b"}, "/.h/h -path '/a b'", false},
		{[]string{"/.h/h", "-path", "/it's"}, `/.h/h -path "/it's"`, false},
		{[]string{"/.h/h", "-base", ""}, "/.h/h -base ''", false},
		{[]string{"/.h/h", "-path", `/a'"b`}, "", true},
	}
	for _, c := range cases {
		got, err := commandLine(c.words)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("commandLine(%q) = %q, %v; want %q (error %v)", c.words, got, err, c.want, c.err)
		}
	}
}
