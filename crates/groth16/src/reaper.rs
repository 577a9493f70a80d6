//! Frees large buffers on one background thread: dropping gigabytes at once stalls every core,
//! so the critical path hands them over instead.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

type Garbage = Box<dyn Send>;

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
