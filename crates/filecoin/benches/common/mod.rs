//! What the hand-run assignment benches share.

/// The value after `name` on the command line (`cargo bench ... -- --size 32GiB`), else
/// `default`: these benches take a few flags and need no argument parser.
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
