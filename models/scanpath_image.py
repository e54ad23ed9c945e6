"""Scanpath-image classifier: the scanpath drawn as a picture, read by an image backbone.

Reference: Shubi et al. (2025), *Decoding reading goals from eye movements*, ACL, arXiv:2410.20779v3: a ViT and a
ConvNeXt V2 classify "the scanpath drawn as an image (circle size = duration, colour gradient = order, saccades
coloured by type)"; with the same protocol they reach 64.4 / 63.7 % accuracy on new participants, above BEyeLSTM
(61.6) and below the fixation-sequence transformers.

Idea: the page is a canvas; each fixation is a red disc whose radius grows with its duration and whose intensity
fades with its order (the first fixation 1.0, the last 0.25); each saccade is a line coloured by its type:
green for forward (1.0) and within-word (0.5) saccades, blue for regressions (1.0) and saccades to or from off
the text (0.5). Regressions run back over the forward path, so they get a channel of their own rather than a
shade that a forward saccade would paint over. A picture has no sequence length, so the classifier needs no
recurrence: any image backbone reads it.

Inputs (legend: B trials, F fixations, S = ``image_size``): from :class:`readgaze.models.data.batch.ReadingBatch`, the
fixation
features ``x_px``, ``y_px`` and ``duration_ms`` (robust-scaled on the training split by the datamodule, so the
canvas spans ``[-extent, extent]`` scaled units on both axes, the same for every trial), ``fixation_mask`` and
``fixation_word_index`` (saccade type). Text is not read. The picture is drawn on the model's device in
:func:`render_scanpath` (``(B, 3, S, S)`` float32 in ``[0, 1]``), so nothing is rendered ahead of training.

Backbones:

* ``"tiny"``: a randomly initialised four-stage ConvNeXt V2 (Woo et al., 2023, CVPR: depth-wise 7x7 convolution,
  LayerNorm, 4x inverted bottleneck with global response normalisation), 16-128 channels, ~0.3 M parameters: for
  tests and CPU runs, needs nothing beyond torch.
* any other value: a ``timm`` model name (``convnextv2_atto``, ``vit_tiny_patch16_224``, ...; needs the
  ``readgaze[image]`` extra), created with ``pretrained=False``; ``backbone_checkpoint`` loads its weights from a
  local file (timm's ``pretrained_cfg_overlay``), and the image is then normalised with the checkpoint's mean/std.

Departures from the paper: the paper renders 224x224 pictures with matplotlib once, before training; here they
are drawn on the fly at ``image_size`` (64 by default: a paragraph's fixations stay apart at that size and CPU
training stays cheap; use 224 with a pretrained timm checkpoint). Positions are the datamodule's scaled ones, not
raw pixels, so the canvas adapts to any screen.
"""

from __future__ import annotations

import torch
from torch import nn

from readgaze.errors import ConfigError
from readgaze.features import FIXATION_FEATURES
from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import OFF_TEXT, ReadingBatch

_X, _Y, _DURATION = (FIXATION_FEATURES.index(n) for n in ("x_px", "y_px", "duration_ms"))
SACCADE_COLOUR = {"forward": (1.0, 0.0), "within": (0.5, 0.0), "regression": (0.0, 1.0), "off_text": (0.0, 0.5)}
"""(green, blue) intensity of a saccade by type: the next fixated word after, on, or before the current one."""


def render_scanpath(x: torch.Tensor, y: torch.Tensor, duration: torch.Tensor, mask: torch.Tensor,
                    word_index: torch.Tensor, image_size: int = 64, extent: float = 1.5,
                    chunk: int = 64) -> torch.Tensor:
    """Draw each trial's scanpath as an RGB picture.

    Parameters
    ----------
    x, y, duration : torch.Tensor
        ``(B, F)`` float, fixation position and duration in scaled units (x right, y down, as on the screen).
    mask : torch.Tensor
        ``(B, F)`` bool, True = real fixation (padding draws nothing).
    word_index : torch.Tensor
        ``(B, F)`` int64 fixated word, :data:`readgaze.models.data.batch.OFF_TEXT` off the text; sets each saccade's
        type.
    image_size : int
        Side ``S`` of the square picture in pixels.
    extent : float
        The canvas covers ``[-extent, extent]`` scaled units on both axes; fixations outside are clipped to its edge.
    chunk : int
        Fixations drawn at a time (bounds memory at ``B * chunk * S * S`` floats).

    Returns
    -------
    torch.Tensor
        ``(B, 3, S, S)`` float32 in ``[0, 1]``: red the fixation discs (intensity ``1 - 0.75 * order``, order 0
        for the first fixation and 1 for the last), green and blue the saccade lines (:data:`SACCADE_COLOUR`).
        Elements are composited by maximum, so the picture does not depend on drawing order or on padding.
    """
    b, f = x.shape
    device = x.device
    to_px = lambda v: ((v.float().clamp(-extent, extent) + extent) / (2 * extent)) * (image_size - 1)  # noqa: E731
    px, py = to_px(x), to_px(y)  # (B, F)
    radius = 0.6 + 2.4 * torch.sigmoid(duration.float())  # (B, F) pixels: longer fixations, larger discs
    n = mask.sum(dim=1, keepdim=True).clamp(min=2)
    order = torch.cumsum(mask.long(), dim=1).float().sub(1) / (n - 1)  # (B, F) 0 = first ... 1 = last
    nxt = torch.roll(word_index, -1, dims=1)
    kind = torch.full_like(word_index, 0)  # index into SACCADE_COLOUR's order
    kind = torch.where(nxt == word_index, 1, kind)
    kind = torch.where(nxt < word_index, 2, kind)
    kind = torch.where((nxt == OFF_TEXT) | (word_index == OFF_TEXT), 3, kind)
    colour = torch.tensor(list(SACCADE_COLOUR.values()), device=device)[kind]  # (B, F, 2) green, blue
    has_next = mask & torch.roll(mask, -1, dims=1)
    has_next[:, -1] = False
    qx, qy = torch.roll(px, -1, dims=1), torch.roll(py, -1, dims=1)

    grid = torch.arange(image_size, device=device, dtype=torch.float32)
    gy, gx = grid.view(1, 1, -1, 1), grid.view(1, 1, 1, -1)
    red = green = blue = torch.zeros(b, image_size, image_size, device=device)
    for start in range(0, f, chunk):
        part = slice(start, start + chunk)
        cx, cy = px[:, part, None, None], py[:, part, None, None]  # (B, c, 1, 1)
        disc = (radius[:, part, None, None] + 0.5 - torch.sqrt((gx - cx) ** 2 + (gy - cy) ** 2 + 1e-12)).clamp(0, 1)
        disc = disc * mask[:, part, None, None]
        red = torch.maximum(red, (disc * (1.0 - 0.75 * order[:, part, None, None])).amax(dim=1))
        dx, dy = qx[:, part, None, None] - cx, qy[:, part, None, None] - cy
        along = (((gx - cx) * dx + (gy - cy) * dy) / (dx * dx + dy * dy).clamp(min=1e-6)).clamp(0, 1)
        dist = torch.sqrt((gx - cx - along * dx) ** 2 + (gy - cy - along * dy) ** 2 + 1e-12)
        line = (1.0 - dist).clamp(0, 1) * has_next[:, part, None, None]
        green = torch.maximum(green, (line * colour[:, part, 0, None, None]).amax(dim=1))
        blue = torch.maximum(blue, (line * colour[:, part, 1, None, None]).amax(dim=1))
    image = torch.stack([red, green, blue], dim=1)
    return image


class _GRN(nn.Module):
    """Global response normalisation (ConvNeXt V2): each channel rescaled by its share of the spatial L2 norm."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, 1, channels))
        self.beta = nn.Parameter(torch.zeros(1, 1, 1, channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, H, W, C)
        norm = torch.linalg.vector_norm(x, dim=(1, 2), keepdim=True)
        return self.gamma * (x * (norm / (norm.mean(dim=-1, keepdim=True) + 1e-6))) + self.beta + x


class _Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels)
        self.expand, self.grn = nn.Linear(channels, 4 * channels), _GRN(4 * channels)
        self.project = nn.Linear(4 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, H, W)
        h = self.norm(self.depthwise(x).permute(0, 2, 3, 1))
        h = self.project(self.grn(nn.functional.gelu(self.expand(h))))
        return x + h.permute(0, 3, 1, 2)


class TinyConvNeXtV2(nn.Module):
    """Four ConvNeXt V2 stages (one block each, channels ``width * (1, 2, 4, 8)``), global average pool, linear head."""

    def __init__(self, num_classes: int, width: int = 16, dropout: float = 0.1) -> None:
        super().__init__()
        widths = [width * m for m in (1, 2, 4, 8)]
        layers: list[nn.Module] = [nn.Conv2d(3, widths[0], 2, stride=2)]
        for i, c in enumerate(widths):
            if i:
                layers += [nn.GroupNorm(1, widths[i - 1]), nn.Conv2d(widths[i - 1], c, 2, stride=2)]
            layers.append(_Block(c))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.LayerNorm(widths[-1]), nn.Dropout(dropout), nn.Linear(widths[-1], num_classes))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(image).mean(dim=(2, 3)))


def timm_backbone(name: str, num_classes: int, image_size: int, checkpoint: str | None) -> nn.Module:
    """A timm classifier ``name`` for ``image_size`` pictures, weights from the local ``checkpoint`` if given.

    Raises
    ------
    ConfigError
        timm is not installed, or it does not know ``name``.
    """
    try:
        import timm
    except ImportError as error:  # timm needs torchvision, which must match the installed torch build
        raise ConfigError(f"backbone {name!r} needs timm: pip install -e '.[image]' in the readgaze checkout "
                          f"(with a torchvision that matches your torch), or use backbone 'tiny' ({error})") from None
    kwargs = {"img_size": image_size} if "vit" in name or "deit" in name else {}
    if checkpoint:
        kwargs.update(pretrained=True, pretrained_cfg_overlay={"file": checkpoint})
    try:
        return timm.create_model(name, num_classes=num_classes, **kwargs)
    except RuntimeError as error:
        raise ConfigError(f"timm cannot create backbone {name!r}: {error}") from None


class ScanpathImage(ReadingModel):
    """Classify a trial from a picture of its scanpath (:func:`render_scanpath`) with an image backbone.

    Parameters
    ----------
    backbone : str
        ``"tiny"`` (built-in ConvNeXt V2, random init) or a timm model name (``convnextv2_atto``,
        ``vit_tiny_patch16_224``, ...).
    backbone_checkpoint : str, optional
        Local weights file for a timm backbone (its classifier is replaced for ``num_classes``).
    image_size : int
        Side of the square picture in pixels (the paper: 224).
    extent : float
        Half-width of the canvas in scaled feature units (:func:`render_scanpath`).
    dropout : float
        Dropout before the tiny backbone's classifier (the paper's sweep: 0.1, 0.3, 0.5).
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel`; weight decay and warm-up follow the paper's training (AdamW,
        0.1,
        6 %). The learning rate is 1e-3 for the tiny backbone trained from scratch (3e-3 stalls on the planted
        corpus of the tests); the paper's grid {1e-5, 3e-5, 1e-4} is for pretrained backbones.
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "Scanpath image",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2025, ACL, arXiv:2410.20779 (v3)",
        "quick": {"learning_rate": 5e-4},
    }

    def __init__(self, backbone: str = "tiny", backbone_checkpoint: str | None = None, image_size: int = 64,
                 extent: float = 1.5, dropout: float = 0.1, weight_decay: float = 0.1, warmup_ratio: float = 0.06,
                 **training) -> None:
        super().__init__(weight_decay=weight_decay, warmup_ratio=warmup_ratio, **training)
        self.save_hyperparameters()
        self.image_size, self.extent = image_size, extent
        if backbone == "tiny":
            self.backbone = TinyConvNeXtV2(self.num_classes, dropout=dropout)
            mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
        else:
            self.backbone = timm_backbone(backbone, self.num_classes, image_size, backbone_checkpoint)
            cfg = getattr(self.backbone, "pretrained_cfg", {}) if backbone_checkpoint else {}
            mean, std = cfg.get("mean", (0.0, 0.0, 0.0)), cfg.get("std", (1.0, 1.0, 1.0))
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def image(self, batch: ReadingBatch) -> torch.Tensor:
        """The batch's scanpath pictures, ``(B, 3, S, S)`` float32 in ``[0, 1]``."""
        feats = batch.fixation_features
        return render_scanpath(feats[..., _X], feats[..., _Y], feats[..., _DURATION], batch.fixation_mask,
                               batch.fixation_word_index, self.image_size, self.extent)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)``."""
        return self.backbone((self.image(batch) - self.mean) / self.std)
