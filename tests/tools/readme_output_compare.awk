# Compares an output block the README shows (SHOWN, the first file) with what its command printed
# today (the second file). Every shown line must appear in the output, in order, as the same text
# with whitespace runs collapsed, its numbers within the tolerance: relative TOL (a share, from the
# block's "<!-- readme: tolerance N% -->" note, else 0.02), or half a unit of the last digit shown,
# whichever is larger. A shown line "..." skips any lines; a line ending in "..." matches any line
# that begins as it does. Prints each line that has no match, with the nearest line of the same
# text, and exits 1 when there is one. With first_only=1 (the note "<!-- readme: tolerance N% on the
# first number of each line -->", for a table whose other columns are timed on the machine that runs
# it) only each line's text up to its first number and the word after it is compared.
#   awk -v tol=0.02 [-v first_only=1] -f readme_output_compare.awk SHOWN ACTUAL

# |line| with whitespace collapsed and each number replaced by "#"; the numbers go to nums[1..n].
function template(line, nums,    out, n, m) {
  gsub(/[ \t]+/, " ", line)
  sub(/^ /, "", line)
  sub(/ $/, "", line)
  n = 0
  out = ""
  while (match(line, /[0-9]+(,[0-9][0-9][0-9])*(\.[0-9]+)?/)) {
    out = out substr(line, 1, RSTART - 1) "#"
    nums[++n] = substr(line, RSTART, RLENGTH)
    line = substr(line, RSTART + RLENGTH)
  }
  nums[0] = n
  return out line
}

# |line| up to its first number and the word after it (first_only), whitespace collapsed.
function head(line,    rest) {
  gsub(/[ \t]+/, " ", line)
  sub(/^ /, "", line)
  if (!match(line, /[0-9]+(,[0-9][0-9][0-9])*(\.[0-9]+)?/)) return line
  rest = substr(line, RSTART + RLENGTH)
  # Its unit: what is glued to it ("25.7%"), else the next word ("469.6 ms").
  if (rest ~ /^[^ ]/) match(rest, /^[^ ]*/)
  else match(rest, /^ [^ ]*/)
  return substr(line, 1, length(line) - length(rest)) substr(rest, RSTART, RLENGTH)
}

function value(text) {
  gsub(/,/, "", text)
  return text + 0
}

# Half a unit of the last digit |text| shows.
function half_unit(text,    dot) {
  gsub(/,/, "", text)
  dot = index(text, ".")
  if (dot == 0) return 0.5
  return 0.5 / (10 ^ (length(text) - dot))
}

function numbers_match(shown, actual,    i, a, b, slack) {
  if (shown[0] != actual[0]) return 0
  for (i = 1; i <= shown[0]; ++i) {
    a = value(shown[i])
    b = value(actual[i])
    slack = tol * (a < 0 ? -a : a)
    if (slack < half_unit(shown[i])) slack = half_unit(shown[i])
    if ((a - b > slack) || (b - a > slack)) return 0
  }
  return 1
}

FNR == NR { shown[++s] = $0; next }
{ actual[++t] = $0 }

END {
  if (tol == "") tol = 0.02
  pos = 1
  bad = 0
  for (i = 1; i <= s; ++i) {
    line = shown[i]
    if (line ~ /^[ \t]*$/) continue
    if (line ~ /^[ \t]*\.\.\.[ \t]*$/) continue
    prefix = 0
    if (line ~ /\.\.\.[ \t]*$/) { prefix = 1; sub(/[ \t]*\.\.\.[ \t]*$/, "", line) }
    if (first_only) line = head(line)
    split("", want)
    want_text = template(line, want)
    found = 0
    near = ""
    for (j = pos; j <= t; ++j) {
      split("", got)
      candidate = actual[j]
      if (first_only) candidate = head(candidate)
      if (prefix) {
        # Compare with as many of the output's words as the shown line has.
        gsub(/[ \t]+/, " ", candidate)
        sub(/^ /, "", candidate)
        candidate = substr(candidate, 1, length(line) + 8)
      }
      got_text = template(candidate, got)
      if (prefix) {
        got_text = substr(got_text, 1, length(want_text))
        got[0] = want[0]
      }
      if (got_text != want_text) continue
      if (near == "") near = actual[j]
      if (numbers_match(want, got)) { found = j; break }
    }
    if (found) {
      pos = found + 1
    } else {
      print "  shown:  " shown[i]
      print "  output: " (near == "" ? "(no line of that text)" : near)
      bad = 1
    }
  }
  exit bad
}
