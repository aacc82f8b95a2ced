//! Integers, and the range each number key accepts.
//!
//! A TOML integer is read exactly (any radix, `_` separators) into an `i128`, refused if
//! negative, and then narrowed with `try_from` only: a number that does not fit its key's
//! type is an error naming the key, never a different number. The bounds are the caps
//! that keep the model's state space finite (`MAX_CLIENTS`, ...) and the ranges of
//! `tick_ms` and the fault budgets.

use toml::de::DeValue;

use super::parse::{Parser, Result};
use super::read::{Field, Section};
use super::{KeyErrorKind, MAX_FAULTS, MAX_TICK_MS};

const CAP_REASON: &str =
    "the cap is there to keep the model's state space finite and small enough to check";

impl Parser<'_> {
    /// A non-negative integer that fits a `u64`, if the key is given.
    pub(super) fn uint(&self, section: &Section<'_, '_>, key: &str) -> Result<Option<Field<u64>>> {
        let Some(entry) = section.get(key) else {
            return Ok(None);
        };
        let line = self.line(&entry.span());
        let DeValue::Integer(int) = entry.get_ref() else {
            return Err(self.wrong_type(section, key, entry, "an integer"));
        };
        let bad = |message: String| {
            self.err(
                line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                message,
            )
        };
        let n = i128::from_str_radix(int.as_str(), int.radix())
            .map_err(|_| bad(format!("`{}` is not an integer", int.as_str())))?;
        if n < 0 {
            return Err(bad(format!("must not be negative (got {n})")));
        }
        let value = u64::try_from(n).map_err(|_| bad(format!("too large (got {n})")))?;
        Ok(Some(Field { value, line }))
    }

    /// A non-negative integer that fits a `u32`, if the key is given.
    pub(super) fn u32_opt(
        &self,
        section: &Section<'_, '_>,
        key: &str,
    ) -> Result<Option<Field<u32>>> {
        let Some(field) = self.uint(section, key)? else {
            return Ok(None);
        };
        let value = u32::try_from(field.value).map_err(|_| {
            self.err(
                field.line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                format!("too large (got {})", field.value),
            )
        })?;
        Ok(Some(Field {
            value,
            line: field.line,
        }))
    }

    /// A `u32`, or `default` (on the table's line) when the key is not given.
    pub(super) fn u32_or(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        default: u32,
    ) -> Result<Field<u32>> {
        Ok(self.u32_opt(section, key)?.unwrap_or(Field {
            value: default,
            line: section.line,
        }))
    }

    /// A `u32` that must be given.
    pub(super) fn required_u32(&self, section: &Section<'_, '_>, key: &str) -> Result<Field<u32>> {
        let field = self.u32_opt(section, key)?;
        self.required(section, key, field)
    }

    /// `field` is at least `min`.
    pub(super) fn at_least(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: &Field<u32>,
        min: u32,
    ) -> Result<()> {
        if field.value >= min {
            return Ok(());
        }
        Err(self.err(
            field.line,
            section.dotted(key),
            KeyErrorKind::InvalidValue,
            format!("must be at least {min} (got {})", field.value),
        ))
    }

    /// `field` is at most `cap`, a bound that keeps the state space small.
    pub(super) fn at_most_cap(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: &Field<u32>,
        cap: u32,
    ) -> Result<()> {
        if field.value <= cap {
            return Ok(());
        }
        Err(self.err(
            field.line,
            section.dotted(key),
            KeyErrorKind::InvalidValue,
            format!("must be at most {cap} (got {}); {CAP_REASON}", field.value),
        ))
    }

    /// `timing.tick_ms`: 1 to [`MAX_TICK_MS`].
    pub(super) fn tick_ms_in_range(
        &self,
        timing: &Section<'_, '_>,
        tick_ms: &Field<u64>,
    ) -> Result<()> {
        if tick_ms.value == 0 {
            return Err(self.err(
                tick_ms.line,
                timing.dotted("tick_ms"),
                KeyErrorKind::InvalidValue,
                "must be at least 1 (got 0)",
            ));
        }
        if tick_ms.value > MAX_TICK_MS {
            return Err(self.err(
                tick_ms.line,
                timing.dotted("tick_ms"),
                KeyErrorKind::InvalidValue,
                format!(
                    "must be at most {MAX_TICK_MS} (got {}); accepted range 1..={MAX_TICK_MS}",
                    tick_ms.value
                ),
            ));
        }
        Ok(())
    }

    /// A fault budget: 0 to [`MAX_FAULTS`] (the model counts each down as a `u8`).
    pub(super) fn budget_in_range(
        &self,
        faults: &Section<'_, '_>,
        key: &str,
        field: &Field<u32>,
    ) -> Result<()> {
        if field.value <= MAX_FAULTS {
            return Ok(());
        }
        Err(self.err(
            field.line,
            faults.dotted(key),
            KeyErrorKind::InvalidValue,
            format!(
                "must be at most {MAX_FAULTS} (got {}); accepted range 0..={MAX_FAULTS}",
                field.value
            ),
        ))
    }
}
