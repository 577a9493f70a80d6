//! The daemon's stop as everything serving sees it. Once a drain starts, new connections are
//! refused at once (the listeners are closed, so a client's connect fails fast instead of
//! waiting in the kernel's backlog for a handshake that never comes), new submissions on open
//! connections are UNAVAILABLE, and open connections are told to go away once their requests
//! are answered.

use std::sync::Arc;

use tokio::sync::watch;

/// A stop that can be started once and awaited anywhere; cheap to clone.
#[derive(Clone)]
pub struct Drain(Arc<watch::Sender<bool>>);

impl Default for Drain {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }
}

impl Drain {
    /// Starts the drain; later calls do nothing.
    pub fn start(&self) {
        self.0
            .send_if_modified(|draining| !std::mem::replace(draining, true));
    }

    pub fn is_draining(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the drain has started.
    pub async fn started(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`: the channel cannot close while this waits.
        let _ = rx.wait_for(|draining| *draining).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_drain_starts_once_and_wakes_every_waiter() {
        let d = Drain::default();
        assert!(!d.is_draining());
        let waiter = tokio::spawn({
            let d = d.clone();
            async move { d.started().await }
        });
        d.start();
        d.start();
        assert!(d.is_draining());
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .unwrap();
        // Awaited after it started: at once.
        d.started().await;
    }
}
