# Sourced by the scripts that install what an optional test needs. `give_up WHY` says why it cannot be
# installed here and what follows from that, then exits 0 (the test will be skipped), or 1 where REQUIRE is
# 1 (CI). The script sets NAME (its name, for the messages), SKIPPED (what is skipped, how to have it) and
# REQUIRE before it sources this file.

give_up() {
  echo "$NAME: $1" >&2
  echo "$NAME: $SKIPPED" >&2
  if [ "$REQUIRE" = "1" ]; then exit 1; fi
  exit 0
}
