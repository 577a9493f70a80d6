//! Frees large buffers on one background thread: dropping gigabytes at once stalls every core,
//! so the critical path hands them over instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, OnceLock};

type Garbage = Box<dyn Send>;

/// Bytes handed over with [`drop_later_counted`] and not yet freed.
static PENDING: AtomicU64 = AtomicU64::new(0);

/// Gives its bytes back to [`PENDING`] once the value inside has been dropped.
struct Counted<T> {
    value: Option<T>,
    bytes: u64,
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        drop(self.value.take());
        PENDING.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

fn sender() -> &'static Mutex<Sender<Garbage>> {
    static TX: OnceLock<Mutex<Sender<Garbage>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = channel::<Garbage>();
        let spawned = std::thread::Builder::new()
            .name("reaper".into())
            .spawn(move || {
                for garbage in rx {
                    drop(garbage);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no reaper thread ({e}); buffers are freed in place");
        }
        Mutex::new(tx)
    })
}

/// Drops `value` on the reaper thread (or here, if that thread could not start).
pub fn drop_later<T: Send + 'static>(value: T) {
    let tx = sender().lock().unwrap_or_else(|e| e.into_inner());
    if let Err(returned) = tx.send(Box::new(value)) {
        drop(returned);
    }
}

/// As [`drop_later`], for a value holding `bytes` of memory: they count in [`pending_bytes`]
/// until the reaper has freed them, so that a memory budget does not hand them out twice.
pub fn drop_later_counted<T: Send + 'static>(value: T, bytes: u64) {
    PENDING.fetch_add(bytes, Ordering::SeqCst);
    drop_later(Counted {
        value: Some(value),
        bytes,
    });
}

/// Holds the reaper: what is handed over after this is freed only once the guard is dropped
/// (for tests of memory that is on its way out).
pub fn pause() -> Paused {
    let (open, gate) = channel();
    drop_later(Gate(gate));
    Paused(open)
}

/// The guard of [`pause`].
pub struct Paused(Sender<()>);

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// Queued by [`pause`]: the reaper's drop of it blocks until the guard goes.
struct Gate(Receiver<()>);

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = self.0.recv();
    }
}

/// Bytes given to [`drop_later_counted`] that the reaper has not freed yet.
pub fn pending_bytes() -> u64 {
    PENDING.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_garbage_is_pending_until_it_is_freed() {
        /// Says when the reaper got past everything queued before it.
        struct Signal(std::sync::mpsc::Sender<()>);
        impl Drop for Signal {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        // A count no other test's garbage comes near (the counter is the process's).
        const BYTES: u64 = 1 << 50;
        let paused = pause();
        drop_later_counted(vec![0u8; 64], BYTES);
        assert!(pending_bytes() >= BYTES, "held until the reaper frees it");
        let (tx, passed) = std::sync::mpsc::channel();
        drop_later(Signal(tx));
        drop(paused);
        passed.recv().unwrap();
        assert!(pending_bytes() < BYTES, "freed: no longer pending");
    }
}
