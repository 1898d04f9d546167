package bundle

import (
	"errors"
	"fmt"
)

// Reason codes for bundles rejected by the decoder or the validator. They
// are part of the run-output contract (decisions.jsonl) and must stay stable.
const (
	ReasonEmptyBlob           = "empty_blob"
	ReasonNotGzip             = "not_gzip"
	ReasonTruncatedGzip       = "truncated_gzip"
	ReasonCorruptGzip         = "corrupt_gzip"
	ReasonNotTar              = "not_tar"
	ReasonTruncatedTar        = "truncated_tar"
	ReasonUnsafeMemberPath    = "unsafe_member_path"
	ReasonLinkEscapesTree     = "link_escapes_tree"
	ReasonSpecialFile         = "special_file"
	ReasonUnsupportedMember   = "unsupported_member"
	ReasonDuplicateMember     = "duplicate_member"
	ReasonUncompressedTooBig  = "uncompressed_too_large"
	ReasonTooManyMembers      = "too_many_members"
	ReasonFileTooLarge        = "file_too_large"
	ReasonMissingInstruction  = "missing_instruction"
	ReasonEmptyInstruction    = "empty_instruction"
	ReasonMissingTaskToml     = "missing_task_toml"
	ReasonInvalidTaskToml     = "invalid_task_toml"
	ReasonMissingEnvironment  = "missing_environment"
	ReasonMissingEnvDef       = "missing_environment_definition"
	ReasonMissingTestScript   = "missing_test_script"
	ReasonUnsupportedTaskKind = "unsupported_task_kind"
)

// Defect is a reason why a bundle cannot be used. It is a property of the
// task, never of the machine running otcurate.
type Defect struct {
	Reason string // snake_case reason code, one of the Reason* constants
	Detail string // human-readable explanation
	Err    error  // underlying error, if any
}

func (d *Defect) Error() string {
	if d.Err != nil && d.Detail == "" {
		return fmt.Sprintf("%s: %v", d.Reason, d.Err)
	}
	return d.Reason + ": " + d.Detail
}

func (d *Defect) Unwrap() error { return d.Err }

func defectf(reason string, format string, args ...any) *Defect {
	return &Defect{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// AsDefect reports whether err is (or wraps) a *Defect and returns it.
func AsDefect(err error) (*Defect, bool) {
	var d *Defect
	if errors.As(err, &d) {
		return d, true
	}
	return nil, false
}
