"""Text-only encoder baseline: the transformer reads the text alone; gaze is ignored.

Reference: the "RoBERTa (no eyes)" baseline of Shubi et al. (2024), *Fine-grained prediction of reading
comprehension from eye movements*, EMNLP, arXiv:2410.04484, and EyeBench's ``Roberta`` with
``prepend_eye_features_to_text=False`` (Shubi et al., 2025). It measures how much of a task the text (paragraph, and
question where the task gives one) predicts by itself; a gaze model that does not beat it has learned nothing from
the eyes.

Architecture: ``[CLS] paragraph [SEP] (question [SEP])`` → ``AutoModel`` → ``RobertaClassificationHead`` on
``[CLS]``. With the same weights this is exactly ``AutoModelForSequenceClassification`` of a RoBERTa checkpoint
(tested).
"""

from __future__ import annotations

import torch

from readgaze.models.base import ReadingModel
from readgaze.models.data.batch import ReadingBatch
from readgaze.models.text_encoder import ClassificationHead, load_encoder


class TextOnly(ReadingModel):
    """Transformer encoder + classification head on the text only.

    Parameters
    ----------
    text_encoder : str
        ``"tiny"``, ``"minilm"``, or a transformers name/path (the papers: ``roberta-large``).
    freeze_text_encoder : bool
        Train only the head.
    head_dropout : float
        Dropout in the classification head.
    num_classes, learning_rate, weight_decay, warmup_ratio, class_weighted_loss, predictions_dir
        See :class:`readgaze.models.base.ReadingModel`. Defaults follow EyeBench's RoBERTa training (lr 1e-5, wd 0.1,
        warm-up 10 %).
    """

    CARD = {  # the registry reads this (readgaze models, the zoo and learns tests): no other file to edit
        "name": "Text only",
        "tasks": ("reading_goal", "comprehension"),
        "paper": "Shubi et al. 2024, EMNLP, arXiv:2410.04484 (RoBERTa, no eyes)",
        "quick": {"weight_decay": 0.01},
        "sees_gaze": False,
    }

    def __init__(self, text_encoder: str = "tiny", freeze_text_encoder: bool = False, head_dropout: float = 0.1,
                 learning_rate: float = 1e-5, weight_decay: float = 0.1, warmup_ratio: float = 0.1, **training) -> None:
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, warmup_ratio=warmup_ratio, **training)
        self.save_hyperparameters()
        self.encoder = load_encoder(text_encoder, freeze=freeze_text_encoder)
        self.head = ClassificationHead(self.encoder.config.hidden_size, self.num_classes, head_dropout)

    def forward(self, batch: ReadingBatch) -> torch.Tensor:
        """Logits ``(B, num_classes)`` from the text tokens. B batch, T tokens, D hidden."""
        hidden = self.encoder(input_ids=batch.input_ids,
                              attention_mask=batch.attention_mask.long()).last_hidden_state  # (B, T, D)
        return self.head(hidden)  # (B, C)
