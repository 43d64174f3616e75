"""The Learner: a fit loop with metrics, progress, validation, checkpoints, resume and early stopping."""
from __future__ import annotations

import os
import time

from ..autodiff import no_grad
from ..device import Device
from ..errors import BurnError
from ..tensor import Tensor
from . import checkpoint as ckpt
from .early_stopping import EarlyStopping
from .history import History
from .metrics import Loss, get_metric
from .parallel import resolve_parallel
from .progress import ProgressDisplay
from ..graph import graph_for
from .. import amp, optim

__all__ = ["Learner"]


class Learner:
    """Train ``model`` with ``optimizer`` on ``loss_fn(outputs, targets)``.

    - Batches are tuples ``(*inputs, targets)`` (a :class:`burn.data.DataLoader`
      gives them); the model is called as ``model(*inputs)``. Tensors on
      another device are moved to ``device`` (default: the device of the
      model's first parameter).
    - ``metrics``: names (``"accuracy"``, ``"top5"``) or metric objects
      (:class:`burn.train.Metric`); the loss is always tracked. Metrics
      accumulate on the device and are read at an epoch's end and when the
      progress display refreshes, so a step does not wait for the device.
    - ``scheduler``: stepped after every batch (``scheduler_interval="step"``,
      the default) or every epoch (``"epoch"``). A ``burn.optim.ReduceLROnPlateau`` is
      stepped once per epoch with the epoch's ``plateau_monitor`` value (default
      ``"valid_loss"`` when ``fit`` gets a ``valid_loader``, else ``"train_loss"``).
    - ``checkpoint_dir``: after every epoch, model, optimizer, scheduler,
      random streams, counters and history go to ``checkpoint_dir/epoch-XXXX/``
      (atomically); the newest ``keep_last`` are kept (``None``: all).
      ``checkpoint_every=k`` also writes one every ``k`` batches inside an
      epoch (``epoch-XXXX-step-YYYYYY``), for long epochs.
      :meth:`resume` or ``fit(..., resume=True)`` continues from the newest
      one (mid-epoch: the loader replays the epoch's order and the batches
      already trained are skipped) so that, on a deterministic backend such
      as flex, the parameters come out bit-identical to an uninterrupted run.
    - ``early_stopping``: a :class:`burn.train.EarlyStopping`.
    - ``progress``: True (rich bar on a terminal, plain lines otherwise),
      False, a mode string or a :class:`burn.train.ProgressDisplay`.
    - ``autocast``: a ``burn.autocast(...)`` (or its dtype) the forward pass and loss run
      under; ``grad_scaler``: a ``burn.amp.GradScaler`` that scales the loss and steps the
      optimizer (skipping steps with inf/NaN gradients); its state is checkpointed.
    - ``rngs``: ``{name: numpy Generator}`` your data pipeline draws from, saved
      and restored with the checkpoints (numpy's and Python's global
      generators always are).
    - ``data_parallel``: True trains on every rank of a ``burn-dist launch`` job through
      ``burn.dist`` (or give a :class:`burn.train.TrainingParallel`): the model is wrapped so
      that every rank starts from rank 0's parameters and steps with the gradients averaged
      over the ranks; each loader gives each rank a disjoint part of every batch (the global
      batch stays ``batch_size``, so the run follows one process's up to rounding); epoch
      metrics are summed over the ranks; progress and checkpoints are rank 0's; a checkpoint
      resumes on any number of ranks. Under plain ``python`` it is one process.

    Example:
        >>> import burn, numpy as np
        >>> dev = burn.Device.flex().autodiff()
        >>> dev.seed(0)
        >>> X = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
        >>> y = (X[:, 0] > X[:, 1]).astype(np.int64)
        >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), batch_size=16, shuffle=True, seed=0, device=dev)
        >>> model = burn.nn.Linear(2, 2, device=dev)
        >>> learner = burn.train.Learner(model, burn.optim.Adam(model, lr=0.1), burn.nn.functional.cross_entropy,
        ...                              metrics=["accuracy"], progress=False)
        >>> history = learner.fit(dl, epochs=20)
        >>> assert history["train_loss"][-1] < history["train_loss"][0]
        >>> assert learner.evaluate(dl)["accuracy"] > 0.9
    """

    def __init__(self, model, optimizer, loss_fn, *, scheduler=None, metrics=(), device=None,
                 checkpoint_dir=None, keep_last: int | None = 3, early_stopping: EarlyStopping | None = None,
                 progress=True, scheduler_interval: str = "step", rngs: dict | None = None,
                 checkpoint_every: int | None = None, plateau_monitor: str | None = None,
                 autocast=None, grad_scaler=None, data_parallel=False):
        if not callable(model):
            raise BurnError(f"Learner: model must be callable (a burn.nn.Module), got {type(model).__name__}")
        if not hasattr(optimizer, "step") or not hasattr(optimizer, "state_dict"):
            raise BurnError(f"Learner: optimizer must be a burn.optim optimizer, got {type(optimizer).__name__}")
        if not callable(loss_fn):
            raise BurnError(f"Learner: loss_fn must be callable (outputs, targets) -> scalar tensor, "
                            f"got {loss_fn!r}")
        if scheduler_interval not in ("step", "epoch"):
            raise BurnError(f"Learner: scheduler_interval must be 'step' or 'epoch', got {scheduler_interval!r}")
        if keep_last is not None and (isinstance(keep_last, bool) or not isinstance(keep_last, int)
                                      or keep_last < 1):
            raise BurnError(f"Learner: keep_last must be an int >= 1 or None (keep all), got {keep_last!r}")
        if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                             or checkpoint_every < 1):
            raise BurnError(f"Learner: checkpoint_every must be an int >= 1 (batches) or None, "
                            f"got {checkpoint_every!r}")
        if checkpoint_every is not None and checkpoint_dir is None:
            raise BurnError("Learner: checkpoint_every needs a checkpoint_dir to write to")
        if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
            raise BurnError(f"Learner: early_stopping must be a burn.train.EarlyStopping, got {early_stopping!r}")
        self.parallel = resolve_parallel(data_parallel)
        if self.parallel is not None:
            for m in metrics:
                m = get_metric(m)
                if m.state_dict() is None:
                    raise BurnError(f"Learner(data_parallel=True): metric {m.name!r} keeps no state_dict, so it "
                                    f"cannot be summed over the ranks; give it state_dict/load_state_dict "
                                    f"(as burn.train.MeanMetric has)")
            model = self.parallel.prepare(model)
            if not self.parallel.is_main:
                progress = False
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        if grad_scaler is not None and not isinstance(grad_scaler, amp.GradScaler):
            raise BurnError(f"Learner: grad_scaler must be a burn.amp.GradScaler, got {type(grad_scaler).__name__}")
        self.grad_scaler = grad_scaler
        self.autocast = (autocast if autocast is None or isinstance(autocast, amp.autocast)
                         else amp.autocast(autocast))
        if isinstance(scheduler, optim.ReduceLROnPlateau):
            scheduler_interval = "epoch"        # it needs the epoch's metric, not a batch count
        elif plateau_monitor is not None:
            raise BurnError("Learner: plateau_monitor is for a burn.optim.ReduceLROnPlateau scheduler, got "
                            f"{type(scheduler).__name__}")
        self.scheduler, self.scheduler_interval = scheduler, scheduler_interval
        self.plateau_monitor = plateau_monitor
        self.metrics = [get_metric(m) for m in metrics]
        names = ["loss"] + [m.name for m in self.metrics]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise BurnError(f"Learner: two metrics are named {dup}; give them distinct names")
        self.device = self._default_device(model) if device is None else (
            device if isinstance(device, Device) else Device(device))
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.keep_last = keep_last
        self.checkpoint_every = checkpoint_every
        self.early_stopping = early_stopping
        self.display = ProgressDisplay.coerce(progress)
        self.rngs = dict(rngs or {})
        self.history = History()
        self.epoch = 0          # epochs completed
        self.global_step = 0    # optimizer steps taken
        self.epoch_step = 0     # batches trained of the epoch in progress (resumed mid-epoch: > 0)
        self._epoch_partial: dict | None = None   # that epoch's metric states and counters
        self._loaders: dict = {}
        self._pending_loader_state: dict | None = None
        self.last_checkpoint: str | None = None

    @staticmethod
    def _default_device(model) -> Device:
        params = model.parameters() if hasattr(model, "parameters") else []
        return params[0].device if params else Device.default()

    # -- batches ---------------------------------------------------------------------------
    def _split(self, batch):
        if isinstance(batch, dict):
            raise BurnError("Learner: dict batches are not supported; give (inputs..., targets) tuples "
                            "(or a collate that returns them)")
        if not isinstance(batch, (tuple, list)) or len(batch) < 2:
            what = f"a {type(batch).__name__}" + (f" of {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            raise BurnError(f"Learner: a batch must be a tuple (inputs..., targets), got {what}; a "
                            f"DataLoader over ArrayDataset(x, y) gives (x, y)")
        moved = [self._to_device(x) for x in batch]
        return moved[:-1], moved[-1]

    def _to_device(self, x):
        if isinstance(x, Tensor) and x.device != self.device:
            return x.to_device(self.device)
        return x

    @staticmethod
    def _count(targets, inputs) -> int:
        ref = targets if isinstance(targets, Tensor) and targets.ndim else inputs[0]
        return int(ref.shape[0]) if isinstance(ref, Tensor) and ref.ndim else 1

    # -- loops -----------------------------------------------------------------------------
    def fit(self, train_loader, epochs: int, valid_loader=None, *, resume: bool = False) -> History:
        """Train until ``epochs`` epochs are done in total; returns the :class:`History`.

        ``epochs`` counts from the start of training, so a run resumed after
        epoch 2 with ``epochs=4`` trains epochs 3 and 4. ``resume=True``
        first loads the newest checkpoint of ``checkpoint_dir`` (if there is
        none, training starts from scratch). The train loader's epoch is set
        before each epoch (``set_epoch``), so a shuffling DataLoader replays
        the same orders after a resume.

        Example:
            >>> import burn, numpy as np
            >>> dev = burn.Device.flex().autodiff()
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.ones((4, 1), np.float32), np.zeros(4, np.int64)), 2)
            >>> m = burn.nn.Linear(1, 2, device=dev)
            >>> h = burn.train.Learner(m, burn.optim.SGD(m, lr=0.1), burn.nn.functional.cross_entropy,
            ...                        progress=False).fit(dl, epochs=3)
            >>> assert h["epoch"] == [1, 2, 3] and h["train_loss"][2] < h["train_loss"][0]
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise BurnError(f"Learner.fit: epochs must be an int >= 0 (the total to reach), got {epochs!r}")
        self._loaders = {"train": train_loader}
        if valid_loader is not None:
            self._loaders["valid"] = valid_loader
        if self.parallel is not None:
            for dl in self._loaders.values():
                self.parallel.shard(dl)
        if resume:
            if self.checkpoint_dir is None:
                raise BurnError("Learner.fit(resume=True) needs the Learner's checkpoint_dir")
            if ckpt.latest_checkpoint(self.checkpoint_dir) is not None:
                self.resume(self.checkpoint_dir)
        if self.checkpoint_every and hasattr(train_loader, "track_host_rng"):
            train_loader.track_host_rng = True
        if self._pending_loader_state is not None:   # resume() ran before the loaders were known
            self._apply_loader_state(self._pending_loader_state)
            self._pending_loader_state = None
        es = self.early_stopping
        if es is not None:
            if es.monitor.startswith("valid_") and valid_loader is None:
                raise BurnError(f"EarlyStopping monitors {es.monitor!r}: valid_* keys need a valid_loader "
                                f"(fit(train, epochs, valid_loader=...)), or monitor a train_* key")
            es.resolve_mode(self._higher_is_better(es.monitor))
            if es.stopped:
                return self.history
        try:
            steps = len(train_loader)
        except TypeError:
            steps = None
        display = self.display
        display.start(epochs=epochs, start_epoch=min(self.epoch, epochs), steps_per_epoch=steps)
        try:
            if resume and (self.epoch or self.epoch_step):
                where = f" and {self.epoch_step} batches of epoch {self.epoch + 1}" if self.epoch_step else ""
                display.message(f"resumed from {self.last_checkpoint} after epoch {self.epoch}{where}")
            while self.epoch < epochs:
                record = self._train_epoch(train_loader, display)
                if valid_loader is not None:
                    record.update({f"valid_{k}": v for k, v in self.evaluate(valid_loader).items()})
                if self.scheduler is not None and self.scheduler_interval == "epoch":
                    self._step_epoch_scheduler(record, valid_loader is not None)
                self.epoch += 1
                self.history.append(record)
                stop = False
                if es is not None:
                    if es.monitor not in record:
                        raise BurnError(f"EarlyStopping monitors {es.monitor!r}, which the epoch's record lacks "
                                        f"(it has {', '.join(k for k in record if k != 'epoch')}); "
                                        f"valid_* keys need a valid_loader")
                    stop = es.update(record[es.monitor])
                    self.history.stopped_early = stop
                if self.checkpoint_dir is not None:
                    self.save_checkpoint()
                display.epoch_end(self.epoch - 1, record)
                if stop:
                    display.message(f"early stopping: {es.monitor} has not improved for {es.patience} epochs "
                                    f"(best {es.best:.6g} at epoch {es.best_epoch})")
                    break
        finally:
            display.close()
        return self.history

    def _train_epoch(self, loader, display) -> dict:
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(self.epoch)
        if hasattr(self.model, "train"):
            self.model.train()
        loss_m = Loss()
        for m in self.metrics:
            m.reset()
        tracked = [loss_m] + self.metrics
        t0 = time.perf_counter()
        samples = 0
        step = 0
        skip = self.epoch_step                  # resumed mid-epoch: these batches are trained already
        if skip and self._epoch_partial is not None:
            partial = self._epoch_partial
            samples = int(partial["samples"])
            t0 -= float(partial["time_s"])
            for m, st in zip(tracked, partial["metrics"]):
                if st is not None:
                    m.load_state_dict(st, self.device)
        self._epoch_partial = None
        first = 1
        if skip and hasattr(loader, "skip_batches"):
            loader.skip_batches(skip)            # a burn DataLoader starts there without building them
            first = skip + 1
        for step, batch in enumerate(loader, first):
            if step <= skip:                     # another iterable: read past the trained batches
                continue
            inputs, targets = self._split(batch)
            outputs, loss = self._forward(inputs, targets)
            if self.grad_scaler is not None:
                self.grad_scaler.step(self.optimizer, self._gradients(self.grad_scaler.scale(loss)))
                self.grad_scaler.update()
            else:
                self.optimizer.step(self._gradients(loss))
            if self.scheduler is not None and self.scheduler_interval == "step":
                self.scheduler.step()
            self.global_step += 1
            n = self._count(targets, inputs)
            # run the step's recorded work now (a flush, not a sync: an accelerator queues it and
            # returns): every step then hands the planner the same graph, whose plan is cached,
            # where a pending graph cut at arbitrary points across steps would be planned anew
            self._flush()
            samples += n
            with no_grad():
                loss_m.update_loss(loss, n)
                out = _detach(outputs)
                for m in self.metrics:
                    m.update(out, targets)
            display.update(epoch=self.epoch, step=step, samples=n,
                           read=lambda: {m.name: m.compute() for m in tracked})
            self.epoch_step = step
            if self.checkpoint_every and step % self.checkpoint_every == 0:
                self.save_checkpoint(partial={"samples": samples, "time_s": time.perf_counter() - t0,
                                              "metrics": [m.state_dict() for m in tracked]},
                                     host_rng=getattr(loader, "host_rng_after_batch", None))
        if skip and step < skip:
            raise BurnError(f"Learner.fit: resumed after batch {skip} of epoch {self.epoch + 1}, but the train "
                            f"loader gave only {step} batches; resume with the loader the checkpoint was "
                            f"written with")
        self.epoch_step = 0
        if step == 0:
            raise BurnError(f"Learner.fit: the train loader gave no batch in epoch {self.epoch + 1}")
        record = {"epoch": self.epoch + 1}
        record.update({f"train_{m.name}": v for m, v in zip(tracked, self._compute(tracked))})
        elapsed = time.perf_counter() - t0
        if self.parallel is not None:
            samples = int(self.parallel.reduce_sums([float(samples)])[0])
        record["lr"] = float(self.optimizer.lr) if hasattr(self.optimizer, "lr") else None
        record["time_s"] = elapsed
        record["samples_per_s"] = samples / max(elapsed, 1e-9)
        return record

    def _step_epoch_scheduler(self, record: dict, has_valid: bool) -> None:
        if not isinstance(self.scheduler, optim.ReduceLROnPlateau):
            self.scheduler.step()
            return
        key = self.plateau_monitor or ("valid_loss" if has_valid else "train_loss")
        if key not in record:
            raise BurnError(f"Learner: ReduceLROnPlateau monitors {key!r}, which the epoch's record lacks "
                            f"(it has {sorted(record)}); pass plateau_monitor= one of those")
        self.scheduler.step(record[key])

    def evaluate(self, loader) -> dict:
        """Loss and metrics over ``loader`` in eval mode without gradients: ``{"loss": .., "accuracy": ..}``.

        The model's training mode is restored afterwards.

        Example:
            >>> import burn, numpy as np
            >>> m = burn.nn.Linear(2, 2)
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.eye(2, dtype=np.float32), np.arange(2)), 2)
            >>> res = burn.train.Learner(m, burn.optim.SGD(m), burn.nn.functional.cross_entropy,
            ...                          metrics=["accuracy"], progress=False).evaluate(dl)
            >>> pred = m(burn.tensor(np.eye(2, dtype=np.float32))).numpy().argmax(1)
            >>> assert sorted(res) == ["accuracy", "loss"] and res["accuracy"] == (pred == np.arange(2)).mean()
        """
        if self.parallel is not None:
            self.parallel.shard(loader)
        was_training = getattr(self.model, "training", True)
        if hasattr(self.model, "eval"):
            self.model.eval()
        loss_m = Loss()
        for m in self.metrics:
            m.reset()
        n_batches = 0
        try:
            with no_grad():
                for batch in loader:
                    inputs, targets = self._split(batch)
                    outputs, loss = self._forward(inputs, targets)
                    loss_m.update_loss(loss, self._count(targets, inputs))
                    out = _detach(outputs)
                    for m in self.metrics:
                        m.update(out, targets)
                    n_batches += 1
        finally:
            if hasattr(self.model, "train"):
                self.model.train(was_training)
        if n_batches == 0:
            raise BurnError("Learner.evaluate: the loader gave no batch")
        tracked = [loss_m] + self.metrics
        return {m.name: v for m, v in zip(tracked, self._compute(tracked))}

    def _gradients(self, loss):
        grads = loss.backward()
        return grads if self.parallel is None else self.parallel.gradients(grads)

    def _compute(self, tracked) -> list:
        """Each metric's value; with data_parallel, over every rank's samples (states summed)."""
        if self.parallel is None:
            return [float(m.compute()) for m in tracked]
        states = [m.state_dict() for m in tracked]
        sums = self.parallel.reduce_sums([v for st in states for v in (st["total"] or 0.0, st["count"])])
        out = []
        for i, (m, st) in enumerate(zip(tracked, states)):
            total, count = sums[2 * i], sums[2 * i + 1]
            m.load_state_dict({"total": total, "dtype": st.get("dtype", "float64"), "count": int(count)}, self.device)
            out.append(float(m.compute()))
        return out

    def _flush(self) -> None:
        graph_for(self.device).flush()

    def _higher_is_better(self, key: str):
        for split in ("train_", "valid_"):
            if key.startswith(split):
                name = key[len(split):]
                if name == "loss":
                    return False
                for m in self.metrics:
                    if m.name == name:
                        return bool(getattr(m, "higher_is_better", True))
        return None

    # -- checkpoints -----------------------------------------------------------------------
    def _devices(self) -> list[Device]:
        devs = {}
        for d in [self.device] + [p.device for p in (self.model.parameters() if hasattr(self.model, "parameters")
                                                     else [])]:
            devs[(d.kind, d.index)] = d.inner()
        return list(devs.values())

    def _forward(self, inputs, targets):
        if self.autocast is not None:
            with self.autocast:
                outputs = self.model(*inputs)
                loss = self.loss_fn(outputs, targets)
        else:
            outputs = self.model(*inputs)
            loss = self.loss_fn(outputs, targets)
        if not isinstance(loss, Tensor) or loss.ndim != 0:
            raise BurnError(f"Learner: loss_fn must return a scalar burn tensor, got "
                            f"{type(loss).__name__}{'' if not isinstance(loss, Tensor) else tuple(loss.shape)}")
        return outputs, loss

    def save_checkpoint(self, *, partial: dict | None = None, host_rng=None) -> str:
        """Write ``checkpoint_dir/epoch-XXXX`` for the epochs done so far (the fit calls it every epoch,
        and every ``checkpoint_every`` batches with the epoch's ``partial`` metric states and the
        global random state the loader recorded right after building the last batch trained,
        ``host_rng``, which a prefetching loader has since moved on).

        Example:
            >>> import burn, os, tempfile
            >>> d = tempfile.mkdtemp()
            >>> m = burn.nn.Linear(2, 1)
            >>> path = burn.train.Learner(m, burn.optim.SGD(m), burn.nn.functional.mse_loss,
            ...                           checkpoint_dir=d, progress=False).save_checkpoint()
            >>> assert sorted(os.listdir(path)) == ["learner.json", "model.safetensors", "optimizer.safetensors"]
        """
        if self.checkpoint_dir is None:
            raise BurnError("Learner.save_checkpoint: the Learner has no checkpoint_dir")
        if self.parallel is not None and not self.parallel.is_main:
            return self.last_checkpoint         # every rank holds the same state: rank 0 writes it

        def write(tmp):
            self.model.save(os.path.join(tmp, ckpt.MODEL), metadata={"epoch": str(self.epoch)})
            optim.save(self.optimizer, os.path.join(tmp, ckpt.OPTIM), scheduler=self.scheduler)

        rng = ckpt.capture_rng(self._devices(), self._loaders, self.rngs)
        if host_rng is not None:
            rng.update(ckpt.capture_host_rng(*host_rng))
        meta = {
            "epoch": self.epoch,
            "global_step": self.global_step,
            "history": self.history.to_list(),
            "stopped_early": self.history.stopped_early,
            "early_stopping": None if self.early_stopping is None else self.early_stopping.state_dict(),
            "rng": rng,
            "metrics": ["loss"] + [m.name for m in self.metrics],
            "epoch_step": self.epoch_step if partial is not None else 0,
            "epoch_partial": partial,
            "grad_scaler": None if self.grad_scaler is None else self.grad_scaler.state_dict(),
        }
        self.last_checkpoint = ckpt.write_checkpoint_dir(self.checkpoint_dir, self.epoch, write, meta,
                                                         self.keep_last, step=meta["epoch_step"])
        return self.last_checkpoint

    def resume(self, checkpoint=None) -> "Learner":
        """Load the newest checkpoint of ``checkpoint`` (a checkpoint_dir or one ``epoch-XXXX`` directory;
        default: this Learner's checkpoint_dir) into model, optimizer, scheduler, random streams,
        counters, history and early stopping; returns self.

        A missing, incomplete or corrupted checkpoint is a :class:`burn.BurnError`
        naming the file, raised before anything is loaded (every file is
        checked against its recorded SHA-256 first).

        Example:
            >>> import burn, tempfile
            >>> m = burn.nn.Linear(2, 1)
            >>> try:
            ...     burn.train.Learner(m, burn.optim.SGD(m), burn.nn.functional.mse_loss).resume(tempfile.mkdtemp())
            ... except burn.BurnError as e:
            ...     assert "no checkpoint" in str(e)
        """
        where = checkpoint if checkpoint is not None else self.checkpoint_dir
        if where is None:
            raise BurnError("Learner.resume: give a checkpoint directory (the Learner has no checkpoint_dir)")
        where = os.fspath(where)
        path = ckpt.latest_checkpoint(where)
        if path is None:
            raise BurnError(f"Learner.resume: no checkpoint in {where!r} (expected epoch-XXXX directories "
                            f"written by a Learner with checkpoint_dir={where!r})")
        meta = ckpt.read_checkpoint_meta(path)
        saved_metrics = meta.get("metrics")
        mine = ["loss"] + [m.name for m in self.metrics]
        if saved_metrics is not None and saved_metrics != mine:
            raise BurnError(f"Learner.resume: checkpoint {path!r} was written with metrics {saved_metrics}, "
                            f"this Learner has {mine}; the history would mix them")
        if (meta.get("early_stopping") is None) != (self.early_stopping is None):
            raise BurnError(f"Learner.resume: checkpoint {path!r} was written "
                            f"{'without' if meta.get('early_stopping') is None else 'with'} early stopping, "
                            f"this Learner is {'with' if self.early_stopping is not None else 'without'} it")
        try:
            self.model.load_state(os.path.join(path, ckpt.MODEL))
            optim.load(self.optimizer, os.path.join(path, ckpt.OPTIM), scheduler=self.scheduler)
            if self.early_stopping is not None:
                self.early_stopping.load_state_dict(meta["early_stopping"])
            if self.grad_scaler is not None and self.grad_scaler.is_enabled() and meta.get("grad_scaler"):
                self.grad_scaler.load_state_dict(meta["grad_scaler"])
            self.epoch = int(meta["epoch"])
            self.global_step = int(meta["global_step"])
            self.epoch_step = int(meta.get("epoch_step", 0))
            self._epoch_partial = meta.get("epoch_partial")
            self.history = History(meta["history"])
            self.history.stopped_early = bool(meta.get("stopped_early", False))
            ckpt.restore_rng(meta["rng"], self._devices(), {}, self.rngs)
        except BurnError as e:
            raise BurnError(f"Learner.resume from {path!r}: {e}") from None
        except (KeyError, TypeError, ValueError) as e:
            raise BurnError(f"Learner.resume: checkpoint {path!r} has a malformed {ckpt.META} "
                            f"({type(e).__name__}: {e})") from None
        # the loaders are known only in fit(); their seeds and epochs are restored there
        self._pending_loader_state = meta["rng"].get("loaders", {})
        if self._loaders:
            self._apply_loader_state(self._pending_loader_state)
            self._pending_loader_state = None
        self.last_checkpoint = path
        return self

    def _apply_loader_state(self, state: dict) -> None:
        for name, dl in self._loaders.items():
            s = state.get(name)
            if s is not None and hasattr(dl, "seed"):
                dl.seed = int(s["seed"])

    def __repr__(self):
        return (f"Learner(model={type(self.model).__name__}, optimizer={type(self.optimizer).__name__}, "
                f"metrics={[m.name for m in self.metrics]}, device={self.device}, epoch={self.epoch})")


def _detach(outputs):
    if isinstance(outputs, Tensor):
        return outputs.detach()
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_detach(o) for o in outputs)
    return outputs
