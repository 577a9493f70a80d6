//! Filecoin circuits (work in progress).
