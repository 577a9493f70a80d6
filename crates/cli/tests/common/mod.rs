//! What the CLI test files share: the binary under test and a run that must succeed.

use std::process::Command;

pub fn zkforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zkforge"))
}

/// Runs `cmd`, asserts it succeeded (showing both streams if not), returns its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
