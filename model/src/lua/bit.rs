//! The `bit` library Redis loads (LuaBitOp): 32-bit operations on Lua numbers.
//! Every argument is first normalised as LuaBitOp does: the number rounded and taken
//! modulo 2^32, read as a signed 32-bit integer; every result is such an integer.

use mlua::{Lua, Result, Table, Variadic};

/// A Lua number as LuaBitOp reads it: the low 32 bits of `n + 2^52 + 2^51`, which
/// rounds to the nearest integer and wraps modulo 2^32.
pub(super) fn tobit(n: f64) -> i32 {
    let bits = (n + 6_755_399_441_055_744.0).to_bits() & 0xFFFF_FFFF;
    let low = u32::try_from(bits).expect("masked to 32 bits");
    i32::from_ne_bytes(low.to_ne_bytes())
}

fn unsigned(n: f64) -> u32 {
    u32::from_ne_bytes(tobit(n).to_ne_bytes())
}

fn signed(n: u32) -> f64 {
    f64::from(i32::from_ne_bytes(n.to_ne_bytes()))
}

/// A shift count: its low five bits.
fn count(n: f64) -> u32 {
    unsigned(n) & 31
}

fn fold(args: &[f64], op: fn(u32, u32) -> u32) -> f64 {
    signed(args.iter().map(|&n| unsigned(n)).reduce(op).unwrap_or(0))
}

/// `bit.tohex(x [, n])`: the low `n` hex digits (8 by default), upper case for `n < 0`.
fn tohex(x: f64, n: Option<f64>) -> String {
    let n = n.map_or(8, tobit);
    let digits = usize::try_from(n.unsigned_abs().min(8)).expect("at most 8");
    let text = if n < 0 {
        format!("{:08X}", unsigned(x))
    } else {
        format!("{:08x}", unsigned(x))
    };
    text[8 - digits..].to_string()
}

/// The `bit` table.
pub(super) fn library(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "tobit",
        lua.create_function(|_, x: f64| Ok(f64::from(tobit(x))))?,
    )?;
    t.set(
        "bnot",
        lua.create_function(|_, x: f64| Ok(signed(!unsigned(x))))?,
    )?;
    t.set(
        "band",
        lua.create_function(|_, a: Variadic<f64>| Ok(fold(&a, |x, y| x & y)))?,
    )?;
    t.set(
        "bor",
        lua.create_function(|_, a: Variadic<f64>| Ok(fold(&a, |x, y| x | y)))?,
    )?;
    t.set(
        "bxor",
        lua.create_function(|_, a: Variadic<f64>| Ok(fold(&a, |x, y| x ^ y)))?,
    )?;
    t.set(
        "lshift",
        lua.create_function(|_, (x, n): (f64, f64)| Ok(signed(unsigned(x) << count(n))))?,
    )?;
    t.set(
        "rshift",
        lua.create_function(|_, (x, n): (f64, f64)| Ok(signed(unsigned(x) >> count(n))))?,
    )?;
    t.set(
        "arshift",
        lua.create_function(|_, (x, n): (f64, f64)| Ok(f64::from(tobit(x) >> count(n))))?,
    )?;
    t.set(
        "rol",
        lua.create_function(|_, (x, n): (f64, f64)| Ok(signed(unsigned(x).rotate_left(count(n)))))?,
    )?;
    t.set(
        "ror",
        lua.create_function(|_, (x, n): (f64, f64)| {
            Ok(signed(unsigned(x).rotate_right(count(n))))
        })?,
    )?;
    t.set(
        "bswap",
        lua.create_function(|_, x: f64| Ok(signed(unsigned(x).swap_bytes())))?,
    )?;
    t.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| Ok(tohex(x, n)))?,
    )?;
    Ok(t)
}
