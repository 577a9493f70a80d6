//! The proof kinds as command-line values (`--proof porep|winning-post|window-post|snap`),
//! shared by the commands that take one.

use clap::ValueEnum;
use zkforge_filecoin::ProofKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProofArg {
    Porep,
    WinningPost,
    WindowPost,
    Snap,
}

impl ProofArg {
    pub const ALL: [ProofArg; 4] = [
        ProofArg::Porep,
        ProofArg::WinningPost,
        ProofArg::WindowPost,
        ProofArg::Snap,
    ];

    pub fn kind(self) -> ProofKind {
        match self {
            ProofArg::Porep => ProofKind::PoRep,
            ProofArg::WinningPost => ProofKind::WinningPost,
            ProofArg::WindowPost => ProofKind::WindowPost,
            ProofArg::Snap => ProofKind::SnapDeals,
        }
    }
}
