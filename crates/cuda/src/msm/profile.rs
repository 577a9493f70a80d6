//! Per-phase device times of one MSM, for tuning the cut (`MsmOptions::profile`).

use crate::context::Core;
use crate::CudaError;

/// Device events between an MSM's phases, summed per phase name and printed at the end.
pub(super) struct Profile<'a> {
    core: &'a Core,
    on: bool,
    last: Option<cudarc::driver::CudaEvent>,
    phases: Vec<(&'static str, f32)>,
    notes: Vec<String>,
}

impl<'a> Profile<'a> {
    /// Records nothing (and costs nothing) unless `on`.
    pub fn new(core: &'a Core, on: bool) -> Self {
        let mut p = Profile {
            core,
            on,
            last: None,
            phases: Vec::new(),
            notes: Vec::new(),
        };
        if on {
            p.last = p.core.mark().ok();
        }
        p
    }

    /// Ends phase `name` here (a phase entered several times adds up).
    pub fn mark(&mut self, name: &'static str) -> Result<(), CudaError> {
        if !self.on {
            return Ok(());
        }
        let e = self.core.mark()?;
        if let Some(prev) = &self.last {
            let ms = prev.elapsed_ms(&e)?;
            match self.phases.iter_mut().find(|(n, _)| *n == name) {
                Some(x) => x.1 += ms,
                None => self.phases.push((name, ms)),
            }
        }
        self.last = Some(e);
        Ok(())
    }

    pub fn note(&mut self, s: String) {
        if self.on {
            self.notes.push(s);
        }
    }

    pub fn report(&self, what: &str) {
        if self.on {
            let ph: Vec<String> = self
                .phases
                .iter()
                .map(|(n, t)| format!("{n} {t:.2}"))
                .collect();
            eprintln!(
                "msm profile {what} {}: {} (ms)",
                self.notes.join(" "),
                ph.join(", ")
            );
        }
    }
}
