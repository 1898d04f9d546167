package poolgen

import (
	"embed"
	"fmt"
	"strings"
)

// kataFS holds the Python sources of the kata families, one file per
// reference or wrong implementation: katas/<family>/family.py is a family's
// default reference, katas/<family>/<fn>.py the reference of the variant
// whose function is <fn>, and katas/<family>/<fn>.wrong.py a variant's full
// wrong implementation. See katas/README.md.
//
//go:embed katas/*/*.py
var kataFS embed.FS

// kataPlaceholders turns the identifiers the source files use for the
// function and argument names (valid Python, so the files can be linted)
// into the $FN, $A, $B, $C placeholders that kataVariant.expand fills.
var kataPlaceholders = strings.NewReplacer("__FN__", "$FN", "__A__", "$A", "__B__", "$B", "__C__", "$C")

// kataSource returns the embedded source katas/<path> with its placeholders
// in $ form. The files are compiled into the binary, so a missing one is a
// programming error caught when the package is initialised (and by the
// tests): it panics rather than silently changing the generated pools.
func kataSource(path string) string {
	b, err := kataFS.ReadFile("katas/" + path)
	if err != nil {
		panic(fmt.Sprintf("poolgen: kata source %s: %v", path, err))
	}
	return kataPlaceholders.Replace(string(b))
}
