//! The protected resource: the seed articles' stock counter, optionally behind a storage
//! service that checks fencing tokens. A holder reads the stock, then writes it minus one.
//!
//! Sans-IO like the designs: the model keeps a [`Stock`] in its state, the harness keeps
//! one behind a mutex and records every access in the run's history.

use crate::design_id::Fencing;

/// Why the store refused an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejected {
    /// The token the access carried.
    pub token: u64,
    /// The newest token the store had seen.
    pub newest: u64,
}

/// The stock counter and the newest fencing token it has seen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stock {
    /// How the store checks tokens.
    pub fencing: Fencing,
    /// The current stock.
    pub value: i64,
    /// The newest token seen (0: none yet).
    pub newest: u64,
    /// Writes accepted so far (completed purchases).
    pub accepted: u32,
    /// Accesses rejected for a stale token.
    pub rejected: u32,
    initial: i64,
}

impl Stock {
    /// A counter starting at `initial`.
    pub fn new(initial: i64, fencing: Fencing) -> Self {
        Stock {
            fencing,
            value: initial,
            newest: 0,
            accepted: 0,
            rejected: 0,
            initial,
        }
    }

    /// The stock at the start.
    pub fn initial(&self) -> i64 {
        self.initial
    }

    fn check(&mut self, token: Option<u64>, checked: bool) -> Result<(), Rejected> {
        match token {
            Some(token) if checked => {
                if token < self.newest {
                    self.rejected += 1;
                    return Err(Rejected {
                        token,
                        newest: self.newest,
                    });
                }
                self.newest = token;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Read the stock. With `Fencing::All` the token is checked and raises the newest.
    pub fn read(&mut self, token: Option<u64>) -> Result<i64, Rejected> {
        self.check(token, self.fencing == Fencing::All)?;
        Ok(self.value)
    }

    /// Write a new stock value (a purchase). Checked unless fencing is off.
    pub fn write(&mut self, token: Option<u64>, value: i64) -> Result<(), Rejected> {
        self.check(token, self.fencing != Fencing::Off)?;
        self.value = value;
        self.accepted += 1;
        Ok(())
    }

    /// No lost update: the stock equals the initial stock minus the accepted purchases.
    pub fn consistent(&self) -> bool {
        self.value == self.initial - self.accepted as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_only_fencing_lets_a_stale_read_through() {
        // Kleppmann's example with a read-modify-write: token 33 reads, 34 reads,
        // 33 writes (newest is still 33), 34 writes: one purchase lost.
        let mut s = Stock::new(10, Fencing::Writes);
        let a = s.read(Some(33)).unwrap();
        let b = s.read(Some(34)).unwrap();
        s.write(Some(33), a - 1).unwrap();
        s.write(Some(34), b - 1).unwrap();
        assert!(!s.consistent());
    }

    #[test]
    fn full_fencing_rejects_the_stale_writer() {
        let mut s = Stock::new(10, Fencing::All);
        let a = s.read(Some(33)).unwrap();
        let b = s.read(Some(34)).unwrap();
        assert_eq!(
            s.write(Some(33), a - 1),
            Err(Rejected {
                token: 33,
                newest: 34
            })
        );
        s.write(Some(34), b - 1).unwrap();
        assert!(s.consistent());
        assert_eq!(s.rejected, 1);
    }
}
