package poolgen

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// batchScript (batch.py) is run by one python3 process per chunk of tasks.
// It reads a JSON request on stdin and writes a JSON response on stdout:
//
//	request:  {"codes": {key: source}, "kata": [{"fn", "ref", "wrong": [keys], "cases": [[arg, ...], ...]}],
//	           "shell": [{"model", "files": {relpath: content}, "params": {...}}]}
//	response: {"kata": [{"args": [repr], "out": [repr], "wrong": [[repr]]} | {"error": msg}],
//	           "shell": [{"out": text} | {"error": msg}]}
//
// Kata expected values are repr() of what the reference implementation
// returns; wrong implementations report "<error: ...>" when they raise.
// Shell models compute the normalised observation of the verifier (each
// line stripped, blank lines dropped) from the seed files, mirroring the
// oracle command with LC_ALL=C.
//
//go:embed batch.py
var batchScript string

type batchRequest struct {
	Codes map[string]string `json:"codes"`
	Kata  []kataJob         `json:"kata"`
	Shell []shellJob        `json:"shell"`
}

type kataJob struct {
	Fn    string   `json:"fn"`
	Ref   string   `json:"ref"`
	Wrong []string `json:"wrong,omitempty"`
	Cases [][]any  `json:"cases"`
}

type shellJob struct {
	Model  string            `json:"model"`
	Files  map[string]string `json:"files"`
	Params map[string]string `json:"params"`
}

type kataResult struct {
	Args  []string   `json:"args"`
	Out   []string   `json:"out"`
	Wrong [][]string `json:"wrong"`
	Error string     `json:"error"`
}

type shellResult struct {
	Out   string `json:"out"`
	Error string `json:"error"`
}

type batchResponse struct {
	Kata  []kataResult  `json:"kata"`
	Shell []shellResult `json:"shell"`
}

// runBatch runs the request in one python3 process.
func runBatch(ctx context.Context, python string, req *batchRequest) (*batchResponse, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, "-c", batchScript)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The batch pins the hash seed so that generation stays reproducible even
	// if a reference had a latent dependence on set order; the tests run the
	// oracles under another seed to catch such a dependence.
	cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("poolgen: python batch (%s): %v: %s", python, err, strings.TrimSpace(lastLines(stderr.String(), 20)))
	}
	var resp batchResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("poolgen: python batch: bad output: %v", err)
	}
	if len(resp.Kata) != len(req.Kata) || len(resp.Shell) != len(req.Shell) {
		return nil, fmt.Errorf("poolgen: python batch: got %d/%d results for %d/%d jobs",
			len(resp.Kata), len(resp.Shell), len(req.Kata), len(req.Shell))
	}
	return &resp, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
