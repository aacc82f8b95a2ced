//! The commands of one operation in flight, polled in place by the operation itself.
//!
//! No task is spawned per command: a single-node operation awaits its command as a
//! direct call would, and Redlock's fan-out polls its N commands side by side, each
//! reply handed over as soon as it arrives. Dropping the set (a cancelled operation)
//! drops the commands with it.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use super::error::LockError;
use crate::command::Reply;

type Sent = Pin<Box<dyn Future<Output = (usize, Result<Reply, LockError>)> + Send>>;

/// Commands sent and not yet answered, each tagged with its node.
#[derive(Default)]
pub(crate) struct InFlight {
    sent: Vec<Sent>,
}

impl InFlight {
    /// Add a command's future (it is sent when first polled, by [`InFlight::next`]).
    pub(crate) fn push(
        &mut self,
        node: usize,
        reply: impl Future<Output = Result<Reply, LockError>> + Send + 'static,
    ) {
        self.sent.push(Box::pin(async move { (node, reply.await) }));
    }

    /// Whether nothing is in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }

    /// The next answer to arrive, with its node; `None` when nothing is in flight.
    pub(crate) async fn next(&mut self) -> Option<(usize, Result<Reply, LockError>)> {
        std::future::poll_fn(|cx| {
            if self.sent.is_empty() {
                return Poll::Ready(None);
            }
            for i in 0..self.sent.len() {
                if let Poll::Ready(answer) = self.sent[i].as_mut().poll(cx) {
                    drop(self.sent.swap_remove(i));
                    return Poll::Ready(Some(answer));
                }
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn answers_come_as_they_arrive() {
        let mut set = InFlight::default();
        for (node, ms) in [(0usize, 30u64), (1, 1), (2, 15)] {
            set.push(node, async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Reply::Int(i64::try_from(node).unwrap()))
            });
        }
        let mut order = Vec::new();
        while let Some((node, reply)) = set.next().await {
            assert_eq!(reply.unwrap(), Reply::Int(i64::try_from(node).unwrap()));
            order.push(node);
        }
        assert_eq!(order, vec![1, 2, 0]);
        assert!(set.next().await.is_none());
    }
}
