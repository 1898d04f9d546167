package trial

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseRewardTxt reads reward.txt: one finite float.
func parseRewardTxt(data []byte) (float64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, fmt.Errorf("reward.txt is empty")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("reward.txt is not a number: %.80q", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("reward.txt is not finite: %s", s)
	}
	return v, nil
}

// parseRewardJSON reads reward.json: a flat object of finite numbers with
// a "reward" key (the RL reward).
func parseRewardJSON(data []byte) (float64, map[string]float64, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return 0, nil, fmt.Errorf("reward.json is not a JSON object: %v", err)
	}
	all := make(map[string]float64, len(raw))
	for k, v := range raw {
		f, ok := v.(float64)
		if !ok {
			return 0, nil, fmt.Errorf("reward.json key %q is not a number", k)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, nil, fmt.Errorf("reward.json key %q is not finite", k)
		}
		all[k] = f
	}
	r, ok := all["reward"]
	if !ok {
		return 0, all, fmt.Errorf("reward.json has no \"reward\" key")
	}
	return r, all, nil
}

// networkSignatures are messages that show a command failed because the
// sandbox has no network.
var networkSignatures = []string{
	"Temporary failure resolving",
	"Temporary failure in name resolution",
	"Could not resolve host",
	"Could not resolve",
	"Name or service not known",
	"Network is unreachable",
	"network is unreachable",
	"Failed to establish a new connection",
	"No address associated with hostname",
	"getaddrinfo",
	"unable to access 'http",
}

// looksOffline reports whether output shows a failed network access.
func looksOffline(out string) bool {
	for _, s := range networkSignatures {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
