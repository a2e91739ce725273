#!/bin/sh
# Compiles one snippet (syntax only) and checks the outcome: "ok" must compile; anything else is
# the message the compile must fail with (a misuse must stop the build saying why, not compile,
# nor fail with an opaque concept error).
#   check.sh SNIPPET ok|MESSAGE COMPILER [ARGS...]
snippet=$1
expected=$2
shift 2
output=$("$@" -fsyntax-only "$snippet" 2>&1)
status=$?
if [ "$expected" = ok ]; then
  [ $status -eq 0 ] && { echo "compiled: $snippet"; exit 0; }
  printf '%s\n' "$output"
  echo "FAIL: $snippet should compile"
  exit 1
fi
if [ $status -eq 0 ]; then
  echo "FAIL: $snippet compiled; expected an error saying: $expected"
  exit 1
fi
if ! printf '%s\n' "$output" | grep -qF -- "$expected"; then
  printf '%s\n' "$output"
  echo "FAIL: the error does not say: $expected"
  exit 1
fi
echo "rejected with: $expected"
