//! The `cjson` library Redis loads (lua-cjson): `encode`, `decode` and `null`, with
//! lua-cjson's output (numbers as `%.14g`, `/` escaped, sparse arrays up to its default
//! ratio) and its refusals.

use mlua::{LightUserData, Lua, Result, Table, Value};

/// Deepest nesting lua-cjson encodes and decodes by default.
const MAX_DEPTH: usize = 1000;

fn error(message: impl Into<String>) -> mlua::Error {
    mlua::Error::RuntimeError(message.into())
}

/// `cjson.null`: a light userdata holding NULL.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

#[allow(clippy::cast_precision_loss)]
fn int_to_number(n: i64) -> f64 {
    // An integer that came from a Lua 5.1 number, a double: exact.
    n as f64
}

/// A number as C's `%.14g` writes it.
pub(super) fn format_g14(n: f64) -> String {
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{n:.13e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} writes an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..14).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        let decimals = usize::try_from(13 - exp).expect("exp below 14");
        trim(&format!("{n:.decimals$}"))
    }
}

fn escape(s: &[u8], out: &mut String) {
    out.push('"');
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'/' => out.push_str("\\/"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0..0x20 | 0x7f => out.push_str(&format!("\\u{b:04x}")),
            _ => out.push(char::from(b)),
        }
    }
    out.push('"');
}

fn encode(value: &Value, depth: usize, out: &mut String) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(error(
            "Cannot serialise, excessive nesting (1001)".to_string(),
        ));
    }
    match value {
        Value::Nil => out.push_str("null"),
        Value::LightUserData(u) if u.0.is_null() => out.push_str("null"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        // Lua 5.1 numbers are doubles; mlua hands integral ones over as integers.
        Value::Integer(n) => out.push_str(&format_g14(int_to_number(*n))),
        Value::Number(n) if n.is_finite() => out.push_str(&format_g14(*n)),
        Value::Number(_) => {
            return Err(error(
                "Cannot serialise number: must not be NaN or Infinity",
            ))
        }
        Value::String(s) => escape(&s.as_bytes(), out),
        Value::Table(t) => encode_table(t, depth, out)?,
        other => {
            return Err(error(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

/// A table: an array when every key is a positive integer and the array is not
/// excessively sparse (lua-cjson's default: more than 10 slots and over half empty),
/// else an object of string and number keys.
fn encode_table(t: &Table, depth: usize, out: &mut String) -> Result<()> {
    let mut max = 0usize;
    let mut count = 0usize;
    let mut array = true;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        count += 1;
        let index = match k {
            Value::Integer(i) => usize::try_from(i).ok().filter(|i| *i > 0),
            Value::Number(n) if n.fract() == 0.0 && (1.0..1e15).contains(&n) => {
                format!("{n:.0}").parse::<usize>().ok()
            }
            _ => None,
        };
        match index {
            Some(i) => max = max.max(i),
            None => array = false,
        }
    }
    if array && count > 0 {
        if max > 10 && max > count * 2 {
            return Err(error("Cannot serialise table: excessively sparse array"));
        }
        out.push('[');
        for i in 1..=max {
            if i > 1 {
                out.push(',');
            }
            encode(&t.raw_get::<Value>(i)?, depth + 1, out)?;
        }
        out.push(']');
        return Ok(());
    }
    out.push('{');
    let mut first = true;
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let key = match &k {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Integer(n) => n.to_string().into_bytes(),
            Value::Number(n) => format_g14(*n).into_bytes(),
            _ => {
                return Err(error(
                    "Cannot serialise table: table key must be a number or string",
                ))
            }
        };
        if !first {
            out.push(',');
        }
        first = false;
        escape(&key, out);
        out.push(':');
        encode(&v, depth + 1, out)?;
    }
    out.push('}');
    Ok(())
}

fn decode(lua: &Lua, json: &serde_json::Value) -> Result<Value> {
    Ok(match json {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, decode(lua, item)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(fields) => {
            let t = lua.create_table()?;
            for (k, v) in fields {
                t.raw_set(k.as_str(), decode(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

/// The `cjson` table.
pub(super) fn library(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "encode",
        lua.create_function(|_, value: Value| {
            let mut out = String::new();
            encode(&value, 0, &mut out)?;
            Ok(out)
        })?,
    )?;
    t.set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            let json: serde_json::Value = serde_json::from_slice(&text.as_bytes())
                .map_err(|e| error(format!("Expected value but found invalid token: {e}")))?;
            decode(lua, &json)
        })?,
    )?;
    t.set("null", null())?;
    Ok(t)
}
