//! The attack suite: each test is one thing an outside attacker (or a careless user) tried
//! against the running desk, over HTTP against the real binary on 127.0.0.1, and each failed
//! on the desk before its fix. They check the desk against an attacker, not against its own
//! description. One module per area, under `attacks/`.

#[path = "attacks/desk_fns.rs"]
mod desk_fns;
#[path = "attacks/identity.rs"]
mod identity;
#[path = "attacks/live.rs"]
mod live;
#[path = "attacks/owners_page.rs"]
mod owners_page;
#[path = "attacks/reporter_fns.rs"]
mod reporter_fns;
#[path = "attacks/routes.rs"]
mod routes;
#[path = "attacks/sandbox.rs"]
mod sandbox;
#[path = "attacks/support.rs"]
mod support;
#[path = "attacks/xss.rs"]
mod xss;
