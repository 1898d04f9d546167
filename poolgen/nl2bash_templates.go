package poolgen

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// An nl2bash template is a short file/text task over seed files that the
// Dockerfile copies to /app/data/. Each variant has:
//
//   - Gen: draws the seed files (paths relative to /app/data) and the
//     parameters; it also enforces the properties the wrong oracle relies on
//     (a non-adjacent duplicate, a nested file, a line with two matches...),
//     so the wrong oracle provably produces a different observation;
//   - Instr: alternative phrasings of the instruction;
//   - Oracle / Wrong: the reference command and a subtly wrong one;
//   - Probe: the command the verifier uses to observe the result. The
//     verifier normalises the probe output (strip each line, drop blank
//     lines) and compares it with tests/expected_output.txt.
//
// Placeholders are written @KEY@ and filled from the params; @PATH@ is
// always /app/data/@FILE@.
type shellTemplate struct {
	ID       string
	Category string
	Variants []shellVariant
}

type shellVariant struct {
	Gen    func(r *rand.Rand) (files map[string]string, params map[string]string)
	Instr  []string
	Oracle string
	Wrong  string
	Probe  string
}

const resultProbe = "cat /output/result.txt"

func fill(s string, params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, "@"+k+"@", params[k])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

func withPath(files map[string]string, p map[string]string) (map[string]string, map[string]string) {
	if f, ok := p["FILE"]; ok {
		p["PATH"] = "/app/data/" + f
	}
	return files, p
}

var shellTemplates = []*shellTemplate{
	{
		ID: "count_lines", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"app.log", "server.log", "worker.log"})
					files := map[string]string{
						"logs/" + name:            genLog(r, rint(r, 8, 40), nil),
						"logs/old/" + name + ".1": genLog(r, rint(r, 3, 10), nil),
					}
					return withPath(files, map[string]string{"FILE": "logs/" + name})
				},
				Instr: []string{
					"Count the number of lines in `@PATH@` and write only that number to `/output/result.txt`.",
					"How many lines does the log file `@PATH@` contain? Save just the count in `/output/result.txt`.",
				},
				Oracle: "wc -l < @PATH@ > /output/result.txt",
				Wrong:  "tail -n +2 @PATH@ | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					files := map[string]string{"logs/README.txt": "Rotated logs live here.\nDo not edit.\n"}
					for i, name := range shuffled(r, []string{"api", "db", "cache", "auth", "queue"})[:rint(r, 2, 4)] {
						files["logs/"+name+".log"] = genLog(r, rint(r, 2, 15)+i, nil)
					}
					return files, map[string]string{}
				},
				Instr: []string{
					"Count the total number of lines across all `.log` files directly inside `/app/data/logs` and write the total to `/output/result.txt`.",
					"Write the combined line count of every `*.log` file in `/app/data/logs` (not other files) to `/output/result.txt`, as a single number.",
				},
				Oracle: "cat /app/data/logs/*.log | wc -l > /output/result.txt",
				Wrong:  "wc -l /app/data/logs/*.log | head -n 1 | awk '{print $1}' > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "grep_count", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					pat := pick(r, []string{"ERROR", "FATAL", "timeout"})
					name := pick(r, []string{"app.log", "service.log", "build.log"})
					log := genLog(r, rint(r, 10, 35), []string{pat}) +
						logLine(r, "WARN", fmt.Sprintf("%s while flushing; second %s suppressed", pat, pat)) +
						logLine(r, "INFO", "no "+strings.ToLower(pat)+" here, only lower case")
					return withPath(map[string]string{"logs/" + name: log}, map[string]string{"FILE": "logs/" + name, "PATTERN": pat})
				},
				Instr: []string{
					"Count how many lines of `@PATH@` contain the string `@PATTERN@` (case-sensitive) and write that number to `/output/result.txt`.",
					"Write to `/output/result.txt` the number of lines in `@PATH@` that include `@PATTERN@`, matching case exactly.",
				},
				Oracle: "grep -c '@PATTERN@' @PATH@ > /output/result.txt",
				Wrong:  "grep -o '@PATTERN@' @PATH@ | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					word := pick(r, []string{"warn", "error", "retry"})
					log := genLog(r, rint(r, 8, 30), []string{strings.ToUpper(word), capitalize(word), word}) +
						logLine(r, "INFO", capitalize(word)+" scheduled by the supervisor")
					return withPath(map[string]string{"app.log": log}, map[string]string{"FILE": "app.log", "WORD": word, "UWORD": strings.ToUpper(word)})
				},
				Instr: []string{
					"Count the lines of `@PATH@` that contain `@WORD@` in any letter case (e.g. `@WORD@`, `@UWORD@`) and write the count to `/output/result.txt`.",
					"Case-insensitively, how many lines in `@PATH@` mention `@WORD@`? Put the number in `/output/result.txt`.",
				},
				Oracle: "grep -ci '@WORD@' @PATH@ > /output/result.txt",
				Wrong:  "grep -c '@WORD@' @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "find_ext", Category: "file-operations",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genProject(r), map[string]string{"EXT": pick(r, []string{"py", "md", "sh", "log"})}
				},
				Instr: []string{
					"List every file with the extension `.@EXT@` anywhere under `/app/data/project` (including subdirectories). Write their paths relative to `/app/data/project`, one per line, sorted in byte order (`LC_ALL=C`), to `/output/result.txt`.",
					"Find all `*.@EXT@` files below `/app/data/project`, recursively, and save the list of their paths relative to that directory (e.g. `src/main.py`), sorted in byte order, in `/output/result.txt`.",
				},
				Oracle: "cd /app/data/project && find . -type f -name '*.@EXT@' | sed 's|^\\./||' | sort > /output/result.txt",
				Wrong:  "cd /app/data/project && find . -maxdepth 1 -type f -name '*.@EXT@' | sed 's|^\\./||' | sort > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genProject(r), map[string]string{"EXT": pick(r, []string{"py", "md", "sh", "log"})}
				},
				Instr: []string{
					"Count the `.@EXT@` files in `/app/data/project` and all of its subdirectories, and write the count to `/output/result.txt`.",
					"How many regular files ending in `.@EXT@` exist anywhere under `/app/data/project`? Write the number to `/output/result.txt`.",
				},
				Oracle: "find /app/data/project -type f -name '*.@EXT@' | wc -l > /output/result.txt",
				Wrong:  "ls /app/data/project/*.@EXT@ 2>/dev/null | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "sort_unique", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"names.txt", "hosts.txt", "tags.txt"})
					return withPath(map[string]string{name: genDupLines(r, name)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Write the distinct lines of `@PATH@`, sorted in byte order (`LC_ALL=C`), to `/output/result.txt`, one per line.",
					"Sort `@PATH@` in byte order and remove duplicate lines; save the result in `/output/result.txt`.",
				},
				Oracle: "sort -u @PATH@ > /output/result.txt",
				Wrong:  "uniq @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"names.txt", "hosts.txt", "tags.txt"})
					return withPath(map[string]string{name: genDupLines(r, name)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Count the number of distinct lines in `@PATH@` and write it to `/output/result.txt`.",
					"How many unique entries does `@PATH@` have (one entry per line)? Write the number to `/output/result.txt`.",
				},
				Oracle: "sort -u @PATH@ | wc -l > /output/result.txt",
				Wrong:  "uniq @PATH@ | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "csv_column", Category: "data-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					col := pick(r, []string{"name", "email", "city"})
					idx := map[string]string{"name": "2", "email": "3", "city": "4"}[col]
					return withPath(map[string]string{"users.csv": genUsersCSV(r)}, map[string]string{"FILE": "users.csv", "COL": col, "IDX": idx})
				},
				Instr: []string{
					"`@PATH@` is a comma-separated file with a header line `id,name,email,city`. Write the values of the `@COL@` column (without the header), in file order, one per line, to `/output/result.txt`.",
					"Extract the `@COL@` field from every data row of `@PATH@` (skip the header) and save them, one per line and in their original order, in `/output/result.txt`.",
				},
				Oracle: "tail -n +2 @PATH@ | cut -d, -f@IDX@ > /output/result.txt",
				Wrong:  "cut -d, -f@IDX@ @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"users.csv": genUsersCSV(r)}, map[string]string{"FILE": "users.csv"})
				},
				Instr: []string{
					"List the distinct values of the `city` column (4th field) of `@PATH@`, excluding the header line, sorted in byte order, one per line in `/output/result.txt`.",
					"Which cities appear in `@PATH@`? Write each city once, sorted (`LC_ALL=C`), to `/output/result.txt`. The first line of the CSV is a header.",
				},
				Oracle: "tail -n +2 @PATH@ | cut -d, -f4 | sort -u > /output/result.txt",
				Wrong:  "cut -d, -f4 @PATH@ | sort -u > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "csv_sum", Category: "data-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"sales.csv": genSalesCSV(r)}, map[string]string{"FILE": "sales.csv"})
				},
				Instr: []string{
					"`@PATH@` has the header `date,category,amount`. Compute the sum of the `amount` column over all rows and write it to `/output/result.txt`.",
					"Add up the third column (`amount`) of `@PATH@`, ignoring the header line, and write the total as an integer to `/output/result.txt`.",
				},
				Oracle: "awk -F, 'NR > 1 { total += $3 } END { print total }' @PATH@ > /output/result.txt",
				Wrong:  "awk -F, 'NR > 2 { total += $3 } END { print total }' @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"sales.csv": genSalesCSV(r)}, map[string]string{"FILE": "sales.csv"})
				},
				Instr: []string{
					"For each category in `@PATH@` (header `date,category,amount`), compute the total amount. Write one line per category, `<category> <total>`, sorted by category, to `/output/result.txt`.",
					"Sum the `amount` column of `@PATH@` per `category` and save lines of the form `category total` in `/output/result.txt`, ordered by category name.",
				},
				Oracle: "awk -F, 'NR > 1 { s[$2] += $3 } END { for (k in s) print k, s[k] }' @PATH@ | sort > /output/result.txt",
				Wrong:  "awk -F, '{ s[$2] += $3 } END { for (k in s) print k, s[k] }' @PATH@ | sort > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "head_tail", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					n := rint(r, 2, 10)
					name := pick(r, []string{"events.log", "history.txt", "journal.txt"})
					return withPath(map[string]string{name: genEvents(r, rint(r, n+2, 2*n+8))},
						map[string]string{"FILE": name, "N": strconv.Itoa(n), "N1": strconv.Itoa(n - 1)})
				},
				Instr: []string{
					"Write the first @N@ lines of `@PATH@` to `/output/result.txt`.",
					"Save the top @N@ lines of `@PATH@` into `/output/result.txt`.",
				},
				Oracle: "head -n @N@ @PATH@ > /output/result.txt",
				Wrong:  "head -n @N1@ @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					n := rint(r, 2, 10)
					name := pick(r, []string{"events.log", "history.txt", "journal.txt"})
					return withPath(map[string]string{name: genEvents(r, rint(r, 2*n+1, 3*n+6))},
						map[string]string{"FILE": name, "N": strconv.Itoa(n)})
				},
				Instr: []string{
					"Write the last @N@ lines of `@PATH@` to `/output/result.txt`.",
					"Copy the final @N@ lines of `@PATH@` into `/output/result.txt`, keeping their order.",
				},
				Oracle: "tail -n @N@ @PATH@ > /output/result.txt",
				Wrong:  "tail -n +@N@ @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "word_count", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					files := map[string]string{"docs/index.md": "# Index\n\nSee the text files.\n"}
					for _, name := range shuffled(r, []string{"intro", "usage", "faq", "notes", "changes"})[:rint(r, 2, 4)] {
						files["docs/"+name+".txt"] = genText(r, rint(r, 2, 6), 2, 8)
					}
					return files, map[string]string{}
				},
				Instr: []string{
					"Count the total number of words in all `.txt` files in `/app/data/docs` (words are separated by whitespace) and write the number to `/output/result.txt`.",
					"Write the combined word count of every `*.txt` file directly inside `/app/data/docs` to `/output/result.txt`.",
				},
				Oracle: "cat /app/data/docs/*.txt | wc -w > /output/result.txt",
				Wrong:  "cat /app/data/docs/*.txt | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"notes.txt", "essay.txt", "readme.txt"})
					return withPath(map[string]string{name: genText(r, rint(r, 3, 8), 2, 9)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"How many words are in `@PATH@`? Write the number to `/output/result.txt`.",
					"Count the whitespace-separated words of `@PATH@` and store the count in `/output/result.txt`.",
				},
				Oracle: "wc -w < @PATH@ > /output/result.txt",
				Wrong:  "head -n 1 @PATH@ | wc -w > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "sed_replace", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					old, neu := replacePair(r)
					name := pick(r, []string{"config.ini", "app.conf", "settings.cfg"})
					return withPath(map[string]string{name: genConfig(r, old)}, map[string]string{"FILE": name, "OLD": old, "NEW": neu, "OUT": name})
				},
				Instr: []string{
					"Replace every occurrence of `@OLD@` with `@NEW@` in `@PATH@` and write the result to `/output/@OUT@` (leave the original file unchanged).",
					"Create `/output/@OUT@`: a copy of `@PATH@` in which all occurrences of `@OLD@` (several per line are possible) are replaced by `@NEW@`.",
				},
				Oracle: "sed 's/@OLD@/@NEW@/g' @PATH@ > /output/@OUT@",
				Wrong:  "sed 's/@OLD@/@NEW@/' @PATH@ > /output/@OUT@",
				Probe:  "cat /output/@OUT@",
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					old, neu := replacePair(r)
					name := pick(r, []string{"config.ini", "app.conf", "settings.cfg"})
					return withPath(map[string]string{name: genConfig(r, old)}, map[string]string{"FILE": name, "OLD": old, "NEW": neu})
				},
				Instr: []string{
					"Edit `@PATH@` in place: replace every occurrence of `@OLD@` with `@NEW@`.",
					"In the file `@PATH@`, change all `@OLD@` to `@NEW@` (modify the file itself; a line may contain it more than once).",
				},
				Oracle: "sed -i 's/@OLD@/@NEW@/g' @PATH@",
				Wrong:  "sed -i 's/@OLD@/@NEW@/' @PATH@",
				Probe:  "cat @PATH@",
			},
		},
	},
	{
		ID: "rename_files", Category: "file-operations",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					files := map[string]string{}
					for _, w := range shuffled(r, vocab)[:rint(r, 2, 5)] {
						files["notes/"+w+".txt"] = genText(r, 1, 2, 6)
					}
					files["notes/meeting."+strconv.Itoa(rint(r, 2019, 2025))+".txt"] = genText(r, 2, 2, 6)
					files["notes/"+pick(r, []string{"index", "budget", "contacts"})+".csv"] = "a,b\n1,2\n"
					return files, map[string]string{}
				},
				Instr: []string{
					"In `/app/data/notes`, rename every file ending in `.txt` so that it ends in `.md` instead (only the final extension changes: `a.b.txt` becomes `a.b.md`). Leave other files alone.",
					"Change the extension of all `.txt` files in `/app/data/notes` to `.md`, keeping the rest of each name unchanged.",
				},
				Oracle: "cd /app/data/notes && for f in *.txt; do mv -- \"$f\" \"${f%.txt}.md\"; done",
				Wrong:  "cd /app/data/notes && for f in *.txt; do mv -- \"$f\" \"${f%%.*}.md\"; done",
				Probe:  "ls -1A /app/data/notes",
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					files := map[string]string{}
					for _, w := range shuffled(r, []string{"api", "db", "cache", "auth", "queue", "cron"})[:rint(r, 2, 5)] {
						files["logs/"+w+".log"] = genLog(r, rint(r, 1, 4), nil)
					}
					files["logs/"+pick(r, []string{"README.txt", "rotate.conf", "old.gz"})] = "keep me\n"
					return files, map[string]string{"PREFIX": pick(r, []string{"archived_", "old_", "2024_"})}
				},
				Instr: []string{
					"Add the prefix `@PREFIX@` to the name of every `.log` file in `/app/data/logs` (e.g. `api.log` becomes `@PREFIX@api.log`). Other files keep their names.",
					"Rename each `*.log` file in `/app/data/logs` by prepending `@PREFIX@` to its file name; do not touch files with other extensions.",
				},
				Oracle: "cd /app/data/logs && for f in *.log; do mv -- \"$f\" \"@PREFIX@$f\"; done",
				Wrong:  "cd /app/data/logs && for f in *; do mv -- \"$f\" \"@PREFIX@$f\"; done",
				Probe:  "ls -1A /app/data/logs",
			},
		},
	},
	{
		ID: "archive_dir", Category: "file-operations",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genProject(r), map[string]string{"NAME": pick(r, []string{"project", "backup", "snapshot"})}
				},
				Instr: []string{
					"Create a gzip-compressed tar archive `/output/@NAME@.tar.gz` of the directory `/app/data/project`. Paths inside the archive must start with `project/`.",
					"Archive `/app/data/project` into `/output/@NAME@.tar.gz` (tar + gzip) so that extracting it recreates a `project/` directory.",
				},
				Oracle: "tar -czf /output/@NAME@.tar.gz -C /app/data project",
				Wrong:  "tar -czf /output/@NAME@.tar.gz -C /app/data/project .",
				Probe:  "tar -tzf /output/@NAME@.tar.gz | sed -e 's|^\\./||' -e 's|/$||' | sort",
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genProject(r), map[string]string{"NAME": pick(r, []string{"project", "release", "source"})}
				},
				Instr: []string{
					"Create `/output/@NAME@.tar.gz`, a gzip-compressed tar of `/app/data/project` whose member paths start with `project/`, excluding every `*.log` file.",
					"Package `/app/data/project` as `/output/@NAME@.tar.gz` (tar.gz, paths beginning with `project/`) but leave out all `.log` files.",
				},
				Oracle: "tar -czf /output/@NAME@.tar.gz -C /app/data --exclude='*.log' project",
				Wrong:  "tar -czf /output/@NAME@.tar.gz -C /app/data project",
				Probe:  "tar -tzf /output/@NAME@.tar.gz | sed -e 's|^\\./||' -e 's|/$||' | sort",
			},
		},
	},
	{
		ID: "top_words", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"text.txt": genWordText(r)}, map[string]string{"FILE": "text.txt", "N": strconv.Itoa(rint(r, 3, 5))})
				},
				Instr: []string{
					"Find the @N@ most frequent words in `@PATH@` (words are separated by whitespace). Write them to `/output/result.txt` as lines `<word> <count>`, ordered by count (highest first) and then alphabetically.",
					"Write the top @N@ words of `@PATH@` by number of occurrences to `/output/result.txt`, one `word count` pair per line, highest count first, ties broken alphabetically.",
				},
				Oracle: "tr -s '[:space:]' '\\n' < @PATH@ | grep -v '^$' | sort | uniq -c | sort -k1,1nr -k2,2 | head -n @N@ | awk '{print $2, $1}' > /output/result.txt",
				Wrong:  "tr -s '[:space:]' '\\n' < @PATH@ | grep -v '^$' | uniq -c | sort -k1,1nr -k2,2 | head -n @N@ | awk '{print $2, $1}' > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"text.txt": genWordText(r)}, map[string]string{"FILE": "text.txt"})
				},
				Instr: []string{
					"Count the number of distinct words in `@PATH@` (whitespace-separated, case-sensitive) and write it to `/output/result.txt`.",
					"How many different words appear in `@PATH@`? Write the number to `/output/result.txt`.",
				},
				Oracle: "tr -s '[:space:]' '\\n' < @PATH@ | grep -v '^$' | sort -u | wc -l > /output/result.txt",
				Wrong:  "wc -w < @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "largest_file", Category: "file-operations",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genSizedFiles(r, rint(r, 3, 6)), map[string]string{}
				},
				Instr: []string{
					"Write the name (just the file name) of the largest file in `/app/data/files` to `/output/result.txt`.",
					"Which file in `/app/data/files` has the most bytes? Save its base name in `/output/result.txt`.",
				},
				Oracle: "ls -S /app/data/files | head -n 1 > /output/result.txt",
				Wrong:  "ls /app/data/files | head -n 1 > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genSizedFiles(r, rint(r, 4, 7)), map[string]string{}
				},
				Instr: []string{
					"List the 3 largest files in `/app/data/files` as lines `<name> <size-in-bytes>`, largest first, in `/output/result.txt`.",
					"Write the three biggest files of `/app/data/files` to `/output/result.txt`, one `name bytes` pair per line, sorted by size in decreasing order.",
				},
				Oracle: "find /app/data/files -type f -printf '%s %f\\n' | sort -k1,1nr | head -n 3 | awk '{print $2, $1}' > /output/result.txt",
				Wrong:  "find /app/data/files -type f -printf '%s %f\\n' | sort -k1,1n | tail -n 3 | awk '{print $2, $1}' > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "count_files", Category: "file-operations",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genTree(r), map[string]string{}
				},
				Instr: []string{
					"Count the regular files anywhere under `/app/data/tree` (recursively) and write the number to `/output/result.txt`.",
					"How many files (not directories) does `/app/data/tree` contain, including subdirectories? Write the count to `/output/result.txt`.",
				},
				Oracle: "find /app/data/tree -type f | wc -l > /output/result.txt",
				Wrong:  "find /app/data/tree | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return genTree(r), map[string]string{}
				},
				Instr: []string{
					"Count the directories below `/app/data/tree` (recursively, not counting `tree` itself) and write the number to `/output/result.txt`.",
					"Write to `/output/result.txt` how many subdirectories, at any depth, exist inside `/app/data/tree`.",
				},
				Oracle: "find /app/data/tree -mindepth 1 -type d | wc -l > /output/result.txt",
				Wrong:  "find /app/data/tree -type d | wc -l > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "dedupe_lines", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"urls.txt", "ids.txt", "emails.txt"})
					return withPath(map[string]string{name: genDupLines(r, name)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Remove duplicate lines from `@PATH@`, keeping the first occurrence of each line and the original order, and write the result to `/output/result.txt`.",
					"Write `@PATH@` to `/output/result.txt` without repeated lines: keep only the first time each line appears, do not sort.",
				},
				Oracle: "awk '!seen[$0]++' @PATH@ > /output/result.txt",
				Wrong:  "sort -u @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"urls.txt", "ids.txt", "emails.txt"})
					return withPath(map[string]string{name: genDupLines(r, name)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Write the lines of `@PATH@` that occur exactly once, sorted in byte order, to `/output/result.txt`.",
					"Which lines of `@PATH@` are not repeated anywhere in the file? Save them sorted (`LC_ALL=C`) in `/output/result.txt`.",
				},
				Oracle: "sort @PATH@ | uniq -u > /output/result.txt",
				Wrong:  "sort -u @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "case_convert", Category: "text-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"memo.txt", "message.txt", "title.txt"})
					return withPath(map[string]string{name: genText(r, rint(r, 2, 6), 2, 7)}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Convert all letters in `@PATH@` to upper case and write the result to `/output/result.txt`.",
					"Write an upper-cased copy of `@PATH@` to `/output/result.txt`.",
				},
				Oracle: "tr '[:lower:]' '[:upper:]' < @PATH@ > /output/result.txt",
				Wrong:  "sed 's/^./\\U&/' @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					name := pick(r, []string{"memo.txt", "message.txt", "title.txt"})
					text := strings.ToUpper(genText(r, rint(r, 2, 6), 2, 7))
					return withPath(map[string]string{name: text}, map[string]string{"FILE": name})
				},
				Instr: []string{
					"Convert `@PATH@` to lower case and save it as `/output/result.txt`.",
					"Write a copy of `@PATH@` with every upper-case letter turned into lower case to `/output/result.txt`.",
				},
				Oracle: "tr 'A-Z' 'a-z' < @PATH@ > /output/result.txt",
				Wrong:  "sed 's/[A-Z]/\\L&/' @PATH@ > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
	{
		ID: "status_codes", Category: "data-processing",
		Variants: []shellVariant{
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"access.log": genAccessLog(r)}, map[string]string{"FILE": "access.log"})
				},
				Instr: []string{
					"`@PATH@` is a web server access log in the common log format. For each HTTP status code, count the requests; write lines `<status> <count>` sorted by status code to `/output/result.txt`.",
					"Summarise `@PATH@` by HTTP status: one line per status code with the number of requests (`200 17`), ordered by status, in `/output/result.txt`.",
				},
				Oracle: "awk '{print $9}' @PATH@ | sort | uniq -c | awk '{print $2, $1}' > /output/result.txt",
				Wrong:  "awk '{print $10}' @PATH@ | sort | uniq -c | awk '{print $2, $1}' > /output/result.txt",
				Probe:  resultProbe,
			},
			{
				Gen: func(r *rand.Rand) (map[string]string, map[string]string) {
					return withPath(map[string]string{"access.log": genAccessLog(r)}, map[string]string{"FILE": "access.log"})
				},
				Instr: []string{
					"List the distinct client IP addresses (first field) of `@PATH@`, sorted in byte order, one per line, in `/output/result.txt`.",
					"Write every client IP that appears in `@PATH@` exactly once to `/output/result.txt`, sorted (`LC_ALL=C`).",
				},
				Oracle: "awk '{print $1}' @PATH@ | sort -u > /output/result.txt",
				Wrong:  "awk '{print $1}' @PATH@ | uniq > /output/result.txt",
				Probe:  resultProbe,
			},
		},
	},
}

// ---- seed generators ----

var logMessages = []string{
	"request handled", "cache refreshed", "user logged in", "job finished", "connection reset by peer",
	"disk usage at 81%", "config reloaded", "worker started", "heartbeat ok", "slow query detected",
}

func logLine(r *rand.Rand, level, msg string) string {
	return fmt.Sprintf("2024-03-%02d %02d:%02d:%02d %s %s\n", rint(r, 1, 28), r.IntN(24), r.IntN(60), r.IntN(60), level, msg)
}

// genLog returns n log lines; extra levels/words are mixed in when given.
func genLog(r *rand.Rand, n int, extra []string) string {
	levels := []string{"INFO", "INFO", "DEBUG", "WARN"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if len(extra) > 0 && chance(r, 0.35) {
			w := pick(r, extra)
			if chance(r, 0.5) {
				b.WriteString(logLine(r, w, pick(r, logMessages)))
			} else {
				b.WriteString(logLine(r, pick(r, levels), pick(r, logMessages)+" ("+w+")"))
			}
			continue
		}
		b.WriteString(logLine(r, pick(r, levels), pick(r, logMessages)))
	}
	return b.String()
}

func genEvents(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "event %04d %s %s\n", i, pick(r, []string{"start", "stop", "retry", "ok", "fail"}), pick(r, vocab))
	}
	return b.String()
}

// genText returns lines of lower-case words.
func genText(r *rand.Rand, lines, lo, hi int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		n := rint(r, lo, hi)
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(pick(r, []string{" ", " ", "  ", "\t"}))
			}
			b.WriteString(pick(r, vocab))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// genWordText returns whitespace-separated words in which the most frequent
// word occurs at least 3 times and no word is immediately repeated.
func genWordText(r *rand.Rand) string {
	words := smallVocab
	hot := pick(r, words)
	n := rint(r, 20, 50)
	seq := make([]string, 0, n)
	for len(seq) < n {
		w := pick(r, words)
		if chance(r, 0.2) {
			w = hot
		}
		if len(seq) > 0 && seq[len(seq)-1] == w {
			continue
		}
		seq = append(seq, w)
	}
	for k := 0; k < 3; k++ { // guarantee 3 occurrences of hot
		i := 2 + 3*k
		if seq[i-1] != hot && seq[i+1] != hot {
			seq[i] = hot
		}
	}
	var b strings.Builder
	for i, w := range seq {
		b.WriteString(w)
		if (i+1)%rint(r, 5, 9) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

var namePool = map[string][]string{
	"names.txt":  {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"},
	"hosts.txt":  {"db01", "db02", "web01", "web02", "cache01", "lb01", "mq01", "api01", "api02"},
	"tags.txt":   {"bug", "feature", "docs", "ci", "perf", "security", "ux", "infra", "test"},
	"urls.txt":   {"/home", "/login", "/logout", "/api/v1/users", "/api/v1/items", "/static/app.js", "/health", "/about"},
	"ids.txt":    {"1001", "1002", "1010", "1100", "2001", "0042", "0420", "9999", "3141"},
	"emails.txt": {"ann@example.com", "bo@example.org", "cy@example.net", "di@example.com", "ed@example.org", "fay@example.net"},
}

// genDupLines returns lines drawn from a pool such that: the first two
// distinct lines are in decreasing order (so the input is not sorted), some
// line repeats non-adjacently, and at least one line occurs exactly once.
func genDupLines(r *rand.Rand, name string) string {
	pool := shuffled(r, namePool[name])
	hi, lo := pool[0], pool[1]
	if hi < lo {
		hi, lo = lo, hi
	}
	single := pool[2]
	rest := pool[3:]
	lines := []string{hi, lo}
	for n := rint(r, 6, 20); n > 0; n-- {
		lines = append(lines, pick(r, append([]string{hi, lo}, rest...)))
	}
	lines = append(lines, single, hi)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

var cities = []string{"Berlin", "Lisbon", "Oslo", "Paris", "Rome", "Vienna", "Madrid", "Dublin"}

func genUsersCSV(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("id,name,email,city\n")
	names := namePool["names.txt"]
	for i := 1; i <= rint(r, 5, 18); i++ {
		n := pick(r, names)
		fmt.Fprintf(&b, "%d,%s,%s%d@example.com,%s\n", i, capitalize(n), n, i, pick(r, cities))
	}
	return b.String()
}

func genSalesCSV(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("date,category,amount\n")
	cats := []string{"books", "games", "garden", "music", "toys", "tools"}
	for i := 0; i < rint(r, 5, 25); i++ {
		fmt.Fprintf(&b, "2024-%02d-%02d,%s,%d\n", rint(r, 1, 12), rint(r, 1, 28), pick(r, cats), rint(r, 1, 500))
	}
	return b.String()
}

func replacePair(r *rand.Rand) (string, string) {
	p := pick(r, [][2]string{{"localhost", "db.internal"}, {"8080", "9090"}, {"staging", "production"}, {"DEBUG", "INFO"}})
	return p[0], p[1]
}

// genConfig returns an ini-like file where old occurs on several lines, at
// least once twice on the same line.
func genConfig(r *rand.Rand, old string) string {
	lines := []string{
		"[server]",
		"name = " + pick(r, vocab),
		"bind = " + old,
		"",
		"[upstream]",
		fmt.Sprintf("primary = %s ; fallback = %s", old, old),
		"retries = " + strconv.Itoa(rint(r, 1, 9)),
	}
	for n := rint(r, 0, 4); n > 0; n-- {
		k := pick(r, []string{"cache", "proxy", "mirror", "backup"})
		if chance(r, 0.5) {
			lines = append(lines, "  "+k+" = "+old+"/"+pick(r, vocab))
		} else {
			lines = append(lines, k+" = "+pick(r, vocab))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// genProject returns a small source tree under project/ that always has a
// nested file for each extension used by the templates (py, md, sh, log).
func genProject(r *rand.Rand) map[string]string {
	f := map[string]string{
		"project/README.md": "# " + pick(r, vocab) + "\n\nA small project.\n",
	}
	mods := shuffled(r, vocab)
	for i := 0; i < rint(r, 1, 3); i++ {
		f["project/src/"+mods[i]+".py"] = "def " + mods[i] + "():\n    return " + strconv.Itoa(i) + "\n"
	}
	f["project/src/utils/"+mods[4]+".py"] = "VALUE = 1\n"
	f["project/tests/test_"+mods[0]+".py"] = "def test_ok():\n    assert True\n"
	f["project/docs/"+pick(r, []string{"guide", "api", "design"})+".md"] = "Docs.\n"
	f["project/scripts/"+pick(r, []string{"build", "deploy", "lint"})+".sh"] = "#!/bin/sh\necho ok\n"
	f["project/logs/"+pick(r, []string{"build", "run", "test"})+".log"] = genLog(r, 2, nil)
	if chance(r, 0.5) {
		f["project/setup.py"] = "print('setup')\n"
	}
	if chance(r, 0.5) {
		f["project/debug.log"] = genLog(r, 1, nil)
	}
	if chance(r, 0.5) {
		f["project/data/"+mods[5]+".csv"] = "a,b\n1,2\n"
	}
	return f
}

// genSizedFiles returns n files under files/ with distinct sizes, the
// largest of which is not the first in name order.
func genSizedFiles(r *rand.Rand, n int) map[string]string {
	names := shuffled(r, vocab)[:n]
	exts := []string{".txt", ".dat", ".csv", ".bin"}
	sizes := shuffled(r, []int{12, 40, 97, 150, 233, 512, 777, 1024, 1500, 1999})[:n]
	for i := range names {
		names[i] += pick(r, exts)
	}
	first, big := 0, 0
	for i := range names {
		if names[i] < names[first] {
			first = i
		}
		if sizes[i] > sizes[big] {
			big = i
		}
	}
	if first == big {
		other := (first + 1) % n
		sizes[first], sizes[other] = sizes[other], sizes[first]
	}
	out := map[string]string{}
	for i, name := range names {
		out["files/"+name] = sizedContent(sizes[i])
	}
	return out
}

func sizedContent(n int) string {
	const line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(line)
	}
	return b.String()[:n]
}

// genTree returns files under tree/ in nested directories.
func genTree(r *rand.Rand) map[string]string {
	out := map[string]string{}
	dirs := []string{"tree"}
	for n := rint(r, 2, 5); n > 0; n-- {
		parent := pick(r, dirs)
		if strings.Count(parent, "/") >= 3 {
			parent = "tree"
		}
		dirs = append(dirs, parent+"/"+pick(r, []string{"a", "b", "c", "src", "lib", "img", "tmp"})+strconv.Itoa(len(dirs)))
	}
	for _, d := range dirs {
		for k := rint(r, 1, 3); k > 0; k-- {
			out[d+"/"+pick(r, vocab)+strconv.Itoa(k)+".txt"] = "x\n"
		}
	}
	return out
}

func genAccessLog(r *rand.Rand) string {
	ips := shuffled(r, []string{"10.0.0.5", "10.0.0.12", "192.168.1.20", "172.16.4.2", "203.0.113.7", "198.51.100.23"})[:rint(r, 3, 5)]
	if ips[0] < ips[1] {
		ips[0], ips[1] = ips[1], ips[0]
	}
	paths := []string{"/", "/index.html", "/api/items", "/login", "/static/app.css", "/missing"}
	var b strings.Builder
	seq := []string{ips[0], ips[1]}
	for n := rint(r, 8, 25); n > 0; n-- {
		seq = append(seq, pick(r, ips))
	}
	seq = append(seq, ips[2], ips[0])
	for _, ip := range seq {
		fmt.Fprintf(&b, "%s - - [%02d/Mar/2024:%02d:%02d:%02d +0000] \"%s %s HTTP/1.1\" %d %d\n",
			ip, rint(r, 1, 28), r.IntN(24), r.IntN(60), r.IntN(60), pick(r, []string{"GET", "GET", "POST"}),
			pick(r, paths), pick(r, []int{200, 200, 200, 301, 404, 500}), rint(r, 100, 9000))
	}
	return b.String()
}
