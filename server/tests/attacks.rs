//! The desk tried the way an outside attacker tried it (issue 14): one named test per attack,
//! each failing on the code before its fix. One module per area under `attacks/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod attacks {
    mod sandbox;
}
