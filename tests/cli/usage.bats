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

@test "the tools that take any snapshot say in --help that a RAMSES output folder is one" {
  for tool in cic-project dtfe-surface; do
    run "$tool" --help
    assert_success
    assert_output --partial "RAMSES output folder"
  done
}
