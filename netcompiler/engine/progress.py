"""The per-epoch progress bar (sequences done, loss, ETA), shown only on a terminal."""

from tqdm import tqdm


class Progress:
    """A progress bar over the sequences of an epoch; silent when the output is not a terminal."""

    def __init__(self, total: int, desc: str, stream):
        self._bar = tqdm(total=total, desc=desc, unit="seq", file=stream, leave=False, disable=None,
                         dynamic_ncols=True)
        self._steps = 0

    def update(self, num_seqs: int, loss: float) -> None:
        self._steps += 1
        self._bar.set_postfix(step=self._steps, loss=f"{loss:.3f}", refresh=False)
        self._bar.update(num_seqs)

    def close(self) -> None:
        self._bar.close()
