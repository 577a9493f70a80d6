//! indicatif progress bars for long library work.

use indicatif::{ProgressBar, ProgressStyle};
use zkforge_fixtures::sparse::StageProgress;
use zkforge_groth16::generator::GenProgress;

/// A progress bar fed by the key generator (`GenProgress`) or the sparse fixtures'
/// stages (`StageProgress`: the bar restarts, relabelled, per stage).
pub struct WorkBar(ProgressBar);

impl WorkBar {
    /// A spinner with `label` until the generator knows its total, then a bar.
    pub fn new(label: &str) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.set_message(label.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Self(bar)
    }

    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl GenProgress for WorkBar {
    fn start(&self, total: u64) {
        self.0.set_style(
            ProgressStyle::with_template(
                "points [{elapsed_precise}] {wide_bar} {percent:>3}% (eta {eta})",
            )
            .expect("valid template"),
        );
        self.0.set_length(total);
        self.0.set_position(0);
    }

    fn advance(&self, done: u64) {
        self.0.inc(done);
    }
}

impl StageProgress for WorkBar {
    fn stage(&self, name: &str, total: u64) {
        self.0.set_message(name.to_string());
        self.0.reset();
        self.start(total);
    }

    fn advance(&self, done: u64) {
        self.0.inc(done);
    }
}

/// A bar over one job's partitions while the engine proves them.
pub struct ProveBar(ProgressBar);

impl ProveBar {
    pub fn new(circuit: &str, partitions: usize) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some(partitions as u64),
            indicatif::ProgressDrawTarget::stderr(),
        );
        bar.set_style(
            ProgressStyle::with_template(
                "proving {msg} [{elapsed_precise}] {wide_bar} {pos}/{len} partitions",
            )
            .expect("valid template"),
        );
        bar.set_message(circuit.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Self(bar)
    }

    pub fn set_done(&self, partitions: usize) {
        self.0.set_position(partitions as u64);
    }

    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
