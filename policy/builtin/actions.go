package builtin

// Slot kinds: what a template's placeholder takes.
const (
	slotIn   = "IN"   // an input file path from the instruction
	slotOut  = "OUT"  // an output file path from the instruction
	slotDir  = "DIR"  // a directory path from the instruction
	slotPat  = "PAT"  // a literal string from the instruction
	slotOld  = "OLD"  // the string to replace
	slotNew  = "NEW"  // its replacement
	slotN    = "N"    // a number from the instruction
	slotExt  = "EXT"  // a file extension from the instruction
	slotExt2 = "EXT2" // a second file extension (the new one, when renaming)
	slotCol  = "COL"  // a 1-based CSV column index found in the instruction
)

// sharedSlots are the slots that draw from another slot's candidates, and
// the slot whose chosen value they avoid when there is another choice:
// the output is not the input, the replacement not the old string, the new
// extension not the old one.
var sharedSlots = map[string]struct{ from, avoid string }{
	slotOut:  {from: slotIn, avoid: slotIn},
	slotOld:  {from: slotPat},
	slotNew:  {from: slotPat, avoid: slotOld},
	slotExt2: {from: slotExt, avoid: slotExt},
}

// template is a shell action with typed slots. Doc is what a man page
// would say the command does; its words are matched against the
// instruction by the cold-start prior. Nothing here comes from any task's
// tests or solution.
type template struct {
	ID    string
	Cmd   string   // with {SLOT} placeholders
	Slots []string // in the order they are chosen
	Doc   string
}

// solveTemplates are generic text and file commands.
var solveTemplates = []template{
	{"wc_lines", "wc -l < {IN} > {OUT}", []string{slotIn, slotOut}, "count the number of lines of a file"},
	{"wc_words", "wc -w < {IN} > {OUT}", []string{slotIn, slotOut}, "count the number of words of a file, whitespace separated"},
	{"wc_bytes", "wc -c < {IN} > {OUT}", []string{slotIn, slotOut}, "count the number of bytes characters size of a file"},
	{"grep_count", "grep -c -- '{PAT}' {IN} > {OUT}", []string{slotPat, slotIn, slotOut}, "count the lines that contain match a string pattern, case sensitive"},
	{"grep_count_i", "grep -ci -- '{PAT}' {IN} > {OUT}", []string{slotPat, slotIn, slotOut}, "count the lines that contain match a string pattern ignoring letter case, case insensitive"},
	{"grep_lines", "grep -- '{PAT}' {IN} > {OUT}", []string{slotPat, slotIn, slotOut}, "print the lines that contain match a string pattern"},
	{"grep_invert", "grep -v -- '{PAT}' {IN} > {OUT}", []string{slotPat, slotIn, slotOut}, "print the lines that do not contain a string, exclude"},
	{"sort", "LC_ALL=C sort {IN} > {OUT}", []string{slotIn, slotOut}, "sort the lines of a file in order"},
	{"sort_unique", "LC_ALL=C sort -u {IN} > {OUT}", []string{slotIn, slotOut}, "sort lines and remove duplicate lines, distinct unique sorted"},
	{"count_unique", "LC_ALL=C sort -u {IN} | wc -l > {OUT}", []string{slotIn, slotOut}, "count the number of distinct unique lines entries"},
	{"uniq", "uniq {IN} > {OUT}", []string{slotIn, slotOut}, "remove adjacent repeated duplicate lines"},
	{"dedupe_keep_order", "awk '!seen[$0]++' {IN} > {OUT}", []string{slotIn, slotOut}, "remove duplicate lines keeping the first occurrence and the original order"},
	{"lines_once", "LC_ALL=C sort {IN} | uniq -u > {OUT}", []string{slotIn, slotOut}, "lines that occur exactly once, not repeated, sorted"},
	{"head", "head -n {N} {IN} > {OUT}", []string{slotN, slotIn, slotOut}, "output the first top lines of a file"},
	{"tail", "tail -n {N} {IN} > {OUT}", []string{slotN, slotIn, slotOut}, "output the last final lines of a file"},
	{"upper", "tr '[:lower:]' '[:upper:]' < {IN} > {OUT}", []string{slotIn, slotOut}, "convert translate letters to upper case uppercase"},
	{"lower", "tr '[:upper:]' '[:lower:]' < {IN} > {OUT}", []string{slotIn, slotOut}, "convert translate letters to lower case lowercase"},
	{"copy", "cp {IN} {OUT}", []string{slotIn, slotOut}, "copy a file"},
	{"find_count_ext", "find {DIR} -type f -name '*.{EXT}' | wc -l > {OUT}", []string{slotExt, slotDir, slotOut}, "count files with an extension recursively in a directory and subdirectories"},
	{"find_list_ext", "cd {DIR} && find . -type f -name '*.{EXT}' | sed 's|^\\./||' | LC_ALL=C sort > {OUT}", []string{slotExt, slotDir, slotOut}, "find list files with an extension recursively, paths relative to a directory, sorted"},
	{"find_count_files", "find {DIR} -type f | wc -l > {OUT}", []string{slotDir, slotOut}, "count regular files recursively in a directory tree"},
	{"find_count_dirs", "find {DIR} -mindepth 1 -type d | wc -l > {OUT}", []string{slotDir, slotOut}, "count directories subdirectories recursively"},
	{"cat_ext_lines", "cat {DIR}/*.{EXT} | wc -l > {OUT}", []string{slotExt, slotDir, slotOut}, "count total combined lines across all files with an extension in a directory"},
	{"cat_ext_words", "cat {DIR}/*.{EXT} | wc -w > {OUT}", []string{slotExt, slotDir, slotOut}, "count total combined words across all files with an extension in a directory"},
	{"largest_file", "ls -S {DIR} | head -n 1 > {OUT}", []string{slotDir, slotOut}, "name of the largest biggest file by size in a directory"},
	{"csv_column", "tail -n +2 {IN} | cut -d, -f{COL} > {OUT}", []string{slotCol, slotIn, slotOut}, "extract the values of a column field of a comma separated csv file without the header"},
	{"csv_column_unique", "tail -n +2 {IN} | cut -d, -f{COL} | LC_ALL=C sort -u > {OUT}", []string{slotCol, slotIn, slotOut}, "distinct values of a column field of a csv file, sorted"},
	{"csv_sum", "awk -F, 'NR > 1 { s += ${COL} } END { print s }' {IN} > {OUT}", []string{slotCol, slotIn, slotOut}, "sum add up total of a column of a csv file"},
	{"sed_replace", "sed 's/{OLD}/{NEW}/g' {IN} > {OUT}", []string{slotOld, slotNew, slotIn, slotOut}, "replace every occurrence of a string with another, write the result"},
	{"sed_replace_inplace", "sed -i 's/{OLD}/{NEW}/g' {IN}", []string{slotOld, slotNew, slotIn}, "replace every occurrence of a string in place, edit modify the file itself"},
	{"tar_dir", "tar -czf {OUT} -C {DIR}/.. $(basename {DIR})", []string{slotDir, slotOut}, "create a gzip compressed tar archive of a directory"},
	{"word_freq", "tr -s '[:space:]' '\\n' < {IN} | grep -v '^$' | sort | uniq -c | sort -k1,1nr -k2,2 | head -n {N} | awk '{print $2, $1}' > {OUT}", []string{slotN, slotIn, slotOut}, "most frequent words with their count"},
	{"rename_ext", "cd {DIR} && for f in *.{EXT}; do mv -- \"$f\" \"${f%.{EXT}}.{EXT2}\"; done", []string{slotExt, slotExt2, slotDir}, "rename files changing their extension suffix to another one"},
	{"rename_prefix", "cd {DIR} && for f in *.{EXT}; do mv -- \"$f\" '{PAT}'\"$f\"; done", []string{slotExt, slotPat, slotDir}, "rename files with an extension by adding a prefix before their name"},
	{"tar_dir_exclude", "tar -czf {OUT} -C {DIR}/.. --exclude='*.{EXT}' $(basename {DIR})", []string{slotExt, slotDir, slotOut}, "create a gzip compressed tar archive of a directory excluding files with an extension"},
	{"count_distinct_words", "tr -s '[:space:]' '\\n' < {IN} | grep -v '^$' | LC_ALL=C sort -u | wc -l > {OUT}", []string{slotIn, slotOut}, "count the number of distinct different words of a file"},
	{"largest_files_sizes", "find {DIR} -maxdepth 1 -type f -printf '%s %f\\n' | sort -k1,1nr | head -n {N} | awk '{print $2, $1}' > {OUT}", []string{slotN, slotDir, slotOut}, "list the largest biggest files of a directory with their size in bytes"},
	{"field_unique", "awk '{print ${COL}}' {IN} | LC_ALL=C sort -u > {OUT}", []string{slotCol, slotIn, slotOut}, "distinct values of a whitespace separated field of each line, sorted"},
	{"csv_column_named", "awk -F, -v c='{PAT}' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { print $k }' {IN} > {OUT}", []string{slotPat, slotIn, slotOut}, "extract a named column field of a csv file, found by its header name, without the header"},
	{"echo", "printf '%s\\n' '{PAT}' > {OUT}", []string{slotPat, slotOut}, "write a string text to a file"},
}

// exploreTemplates look around without changing anything.
var exploreTemplates = []template{
	{"ls_dir", "ls -la {DIR}", []string{slotDir}, "list a directory"},
	{"head_file", "head -n 20 {IN}", []string{slotIn}, "show the start of a file"},
	{"pwd_ls", "pwd && ls -la", nil, "show where we are"},
}
