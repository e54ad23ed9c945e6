"""Training that says how long it takes: the expected time after epoch 1 and, off a terminal, a line per epoch.

Before: with output going to a file there was no per-epoch line after Lightning's logging-interval warning, and a
1000-epoch config gave no hint that it could run for hours."""

from __future__ import annotations

import lightning as L
import torch

from readgaze.models.training.epochs import EpochLines, epoch_line, first_epoch_line


class _Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_index):
        return self.layer(batch[0]).pow(2).mean()

    def validation_step(self, batch, batch_index):
        self.log("loss/val", self.layer(batch[0]).pow(2).mean())
        self.log("auroc_all/val", 0.625)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_a_run_prints_its_expected_time_then_one_line_per_epoch(tmp_path, capsys):
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=4)
    stopping = L.pytorch.callbacks.EarlyStopping(monitor="loss/val", patience=2)
    trainer = L.Trainer(max_epochs=3, callbacks=[EpochLines(), stopping], default_root_dir=tmp_path, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(_Tiny(), data, data)
    err = capsys.readouterr().err.splitlines()
    first = next(line for line in err if line.startswith("readgaze fit: epoch 1 took"))
    assert "max_epochs 3: at most" in first
    epochs = [line for line in err if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epochs] == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]
    assert "val AUROC 62.5" in epochs[0] and "loss train " in epochs[0] and "s/epoch; left: at most" in epochs[0]


def test_the_lines_name_both_time_bounds():
    stopping = L.pytorch.callbacks.EarlyStopping(monitor="loss/val", patience=10)
    line = first_epoch_line(6.0, 150, stopping)
    assert line == ("epoch 1 took 6.0 s (training + validation); max_epochs 150: at most 15 min 0 s; early stopping "
                    "(patience 10 on loss/val) ends it at epoch 11 at the soonest (1 min 6 s)")
    stopping.wait_count = 4
    line = epoch_line(20, 150, 0.5, {"loss/val": 0.6, "auroc_all/val": 0.7}, 6.0, stopping)
    assert line == ("epoch 20/150: loss train 0.500 val 0.600, val AUROC 70.0; 6.0 s/epoch; left: at most 13 min "
                    "0 s (max_epochs), 36 s if loss/val does not improve again (patience 10)")
