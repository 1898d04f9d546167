# Sourced by scripts/proof-of-learning.sh and scripts/neural-recipe.sh: the
# generated nl2bash splits both draw, the variants both hold out, and the
# lock that keeps a second script off the same OUT.
# Needs OUT and BIN set; NAME is the calling script's name for the message.

# Held out by whole variant: variant 2 of every other template (fixed before
# any measurement; see `go doc poolgen.ShellVariantIDs` for the list).
HELDOUT_VARIANTS=${HELDOUT_VARIANTS:-grep_count/v2,sort_unique/v2,csv_sum/v2,word_count/v2,rename_files/v2,top_words/v2,count_files/v2,case_convert/v2}

# lock_out NAME: one script per OUT (a second would regenerate the splits
# under the first one's runs).
lock_out() {
	mkdir -p "$OUT/splits"
	exec 9>"$OUT/.lock"
	flock -n 9 || { echo "another $1 is using $OUT" >&2; exit 1; }
}

gen() { # NAME SEED N FLAGS...: the split OUT/splits/NAME, drawn afresh
	local name=$1 seed=$2 n=$3
	shift 3
	rm -rf "$OUT/splits/$name"
	"$BIN" gen-pool -n "$n" --kata-share -1 --rates none --seed "$seed" --prefix "$name" "$@" \
		--dir "$OUT/splits/$name" --labels "$OUT/splits/$name.labels.jsonl" --log-level warn >/dev/null
}
