//! `cargo xtask demo`: profiles the bundled example program (not yet implemented).

use anyhow::Result;

pub fn run() -> Result<()> {
    crate::setup::run()?;
    println!("demo: not yet implemented");
    Ok(())
}
