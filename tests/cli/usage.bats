#!/usr/bin/env bats
# Every tool: --help exits 0 and shows an example, --version prints, an unknown option exits 2.
load common

TOOLS=(cic-project phew-segment phew-merge deblend synth-particles voters mergertree dtfe-surface unbind)

@test "every tool has --help with an example and the exit codes" {
  for tool in "${TOOLS[@]}"; do
    run "$tool" --help
    assert_success
    assert_output --partial "Example:"
    assert_output --partial "Exit codes:"
    assert_output --partial "--config"
  done
}

@test "every tool prints --version with build details" {
  for tool in "${TOOLS[@]}"; do
    run "$tool" --version
    assert_success
    assert_output --regexp "^$tool phew [0-9]+\.[0-9]+\.[0-9]+"
    assert_output --partial "compiler:"
  done
}

@test "an unknown option is a usage error, exit 2, one line" {
  for tool in "${TOOLS[@]}"; do
    run --separate-stderr "$tool" --no-such-option
    assert_failure 2
    output=$stderr assert_one_error_line "$tool"
  done
}

@test "a missing required option is a usage error" {
  for tool in "${TOOLS[@]}"; do
    run "$tool"
    assert_failure 2
  done
}

@test "--threads: a positive number or auto in every tool of the chain, anything else one line and exit 2" {
  declare -A args=([cic-project]="in.h5 --grid 8" [phew-segment]="in.h5 --threshold 80mean" [phew-merge]="in.h5"
                    [unbind]="in.h5 snap.h5" [deblend]="in.h5 snap.h5" [voters]="in.h5 snap.h5" [mergertree]="in.h5"
                    [dtfe-surface]="snap.h5 --centers c.txt --size 1 --resolution 8")
  for tool in cic-project phew-segment phew-merge unbind deblend voters mergertree dtfe-surface; do
    run "$tool" --help
    assert_output --partial "--threads"
    for bad in 0 -2 two 1.5; do
      # shellcheck disable=SC2086
      run --separate-stderr "$tool" ${args[$tool]} -o "$OUT/x.h5" --threads "$bad"
      assert_failure 2
      output=$stderr assert_one_error_line "$tool"
      [[ $stderr == *--threads* ]]
    done
  done
  run synth-particles --help
  refute_output --partial "--threads"
}

@test "the tools that take any snapshot say in --help that a RAMSES output folder is one" {
  for tool in cic-project dtfe-surface; do
    run "$tool" --help
    assert_success
    assert_output --partial "RAMSES output folder"
  done
}
