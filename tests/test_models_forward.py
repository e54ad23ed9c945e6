"""Models on a tiny config: forward + backward, PostFusion's band, and equalities with reference models."""

from __future__ import annotations

import pytest
import torch
from synthetic import write_synthetic_dataset
from transformers import RobertaConfig, RobertaForSequenceClassification, RobertaModel

from readgaze.features import FIXATION_FEATURES, TRIAL_FEATURE_NAMES
from readgaze.models.beyelstm import BEyeLSTM
from readgaze.models.data import ReadingDataModule
from readgaze.models.data.batch import OFF_TEXT, ReadingBatch
from readgaze.models.postfusion_eye import PostFusionEye
from readgaze.models.roberteye_f import RoBERTEyeF
from readgaze.models.text_encoder import ensure_token_types, load_tokenizer
from readgaze.models.text_only import TextOnly

GAZE_PARTS = {RoBERTEyeF: "eye_projection", PostFusionEye: "fixation_cnn", BEyeLSTM: "gaze_block", TextOnly: "head"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> ReadingBatch:
    path = write_synthetic_dataset(tmp_path_factory.mktemp("tiny"), n_participants=6, n_items=6, n_words=16,
                                   off_text_rate=0.2)
    dm = ReadingDataModule(str(path), task="comprehension", n_folds=3, batch_size=4)
    dm.setup("fit")
    return next(iter(dm.train_dataloader()))


@pytest.mark.parametrize("model_class", [RoBERTEyeF, PostFusionEye, BEyeLSTM, TextOnly], ids=lambda c: c.__name__)
def test_forward_and_backward(model_class, batch):
    torch.manual_seed(0)
    model = model_class()
    logits = model(batch)
    assert logits.shape == (len(batch), 2) and torch.isfinite(logits).all()
    model.loss(logits, batch.label).backward()
    grads = [p.grad for p in getattr(model, GAZE_PARTS[model_class]).parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def _text_batch(input_ids: torch.Tensor, attention_mask: torch.Tensor, n_fixations: int = 3) -> ReadingBatch:
    """A batch with text and ``n_fixations`` padding fixations (all masked out): gaze is off."""
    b, t = input_ids.shape
    zeros = lambda *shape: torch.zeros(*shape, dtype=torch.int64)  # noqa: E731
    return ReadingBatch(
        trial_id=[f"t{i}" for i in range(b)], label=zeros(b), regime_index=zeros(b), input_ids=input_ids,
        attention_mask=attention_mask, token_segment=attention_mask.long(), word_token_start=zeros(b, 2),
        word_token_end=zeros(b, 2), word_features=torch.zeros(b, 2, 1), word_mask=torch.ones(b, 2, dtype=torch.bool),
        fixation_features=torch.randn(b, n_fixations, len(FIXATION_FEATURES)),
        fixation_mask=torch.zeros(b, n_fixations, dtype=torch.bool),
        fixation_word_index=torch.full((b, n_fixations), OFF_TEXT), fixation_word_category=zeros(b, n_fixations),
        fixation_word_is_content=zeros(b, n_fixations), trial_features=torch.zeros(b, len(TRIAL_FEATURE_NAMES)))


def _tiny_roberta() -> RobertaConfig:
    return RobertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=40, type_vocab_size=1, pad_token_id=1)


def _ids_with_padding() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    ids = torch.randint(3, 100, (2, 12))
    ids[:, 0] = 0
    mask = torch.ones(2, 12, dtype=torch.bool)
    ids[1, 9:], mask[1, 9:] = 1, False
    return ids, mask


def test_text_only_equals_auto_model_for_sequence_classification():
    torch.manual_seed(0)
    reference = RobertaForSequenceClassification(_tiny_roberta()).eval()
    model = TextOnly()
    model.encoder = RobertaModel(_tiny_roberta(), add_pooling_layer=False)
    model.encoder.load_state_dict(reference.roberta.state_dict())
    model.head.load_state_dict(reference.classifier.state_dict())
    model.eval()
    ids, mask = _ids_with_padding()
    with torch.no_grad():
        expected = reference(input_ids=ids, attention_mask=mask.long()).logits
        torch.testing.assert_close(model(_text_batch(ids, mask)), expected)


@pytest.mark.parametrize("backbone", ["tiny-bert", "tiny-roberta"])
def test_roberteye_f_with_gaze_off_equals_the_text_only_model_with_the_eye_separator(backbone):
    torch.manual_seed(0)
    gaze = RoBERTEyeF()
    if backbone == "tiny-roberta":  # RoBERTa: one token type (grown to two) and positions offset by padding_idx + 1
        gaze.encoder = RobertaModel(_tiny_roberta(), add_pooling_layer=False)
        ensure_token_types(gaze.encoder)
    text = TextOnly()
    text.encoder = gaze.encoder
    text.head = gaze.head
    gaze.eval(), text.eval()
    sep, pad = (2, 1) if backbone == "tiny-roberta" else (load_tokenizer("tiny").sep_token_id, 0)
    if backbone == "tiny-roberta":  # the encoder was swapped after construction: <eye> from its </s>
        gaze.eye_token.data = gaze.encoder.embeddings.word_embeddings.weight[sep].clone()
    ids, mask = _ids_with_padding()
    ids = torch.where(mask, ids, pad)
    batch = _text_batch(ids, mask)
    # the text-only model on the same text with one more </s> (the <eye> separator) after its last real token
    n_real = mask.sum(dim=1)
    with_eye = torch.cat([ids, torch.full((len(ids), 1), pad)], dim=1)
    with_eye[torch.arange(len(ids)), n_real] = sep
    eye_mask = torch.cat([mask, torch.zeros(len(ids), 1, dtype=torch.bool)], dim=1)
    eye_mask[torch.arange(len(ids)), n_real] = True
    with torch.no_grad():
        torch.testing.assert_close(gaze(batch), text(_text_batch(with_eye, eye_mask)))
        assert not torch.allclose(gaze(batch), text(batch))  # the <eye> token is really there
        # and the gaze does count once fixations are real
        batch.fixation_mask[:] = True
        batch.fixation_word_index[:] = 0
        batch.word_token_start[:, 0], batch.word_token_end[:, 0] = 1, 3
        assert not torch.allclose(gaze(batch), text(batch))


def test_postfusion_band_admits_the_fixated_word_and_nothing_beyond_the_window(batch):
    torch.manual_seed(0)
    model = PostFusionEye(window=1).eval()
    start, end = batch.fixation_token_band(window=1)
    on_text = batch.fixation_word_index >= 0
    assert on_text.sum() > 10 and (~on_text & batch.fixation_mask).sum() > 0
    word = batch.fixation_word_index.clamp(min=0)
    word_start = torch.gather(batch.word_token_start, 1, word)
    word_end = torch.gather(batch.word_token_end, 1, word)
    assert ((start <= word_start) & (word_end <= end))[on_text].all()

    d = model.encoder.config.hidden_size
    text = torch.randn(len(batch), batch.input_ids.shape[1], d)
    fixations = torch.randn(len(batch), batch.fixation_mask.shape[1], d // 2)
    attend = lambda t: model.fixation_to_text(fixations, t, batch.attention_mask, (start, end), 0.0)  # noqa: E731
    with torch.no_grad():
        base = attend(text)
        nothing_admitted = model.fixation_to_text.out(torch.zeros(d // 2))  # the lab bug's output: bias only
        assert not torch.allclose(base[on_text], nothing_admitted.expand_as(base[on_text]))
        b, i = [int(x) for x in torch.nonzero(on_text)[3]]
        w = int(batch.fixation_word_index[b, i])
        inside = text.clone()
        inside[b, batch.word_token_start[b, w]:batch.word_token_end[b, w]] += 1.0
        assert not torch.allclose(attend(inside)[b, i], base[b, i])
        outside = text.clone()
        outside[b, :start[b, i]] += 1.0
        outside[b, end[b, i]:] += 1.0
        torch.testing.assert_close(attend(outside)[b, i], base[b, i])


@pytest.mark.parametrize("model_class", [RoBERTEyeF, PostFusionEye, BEyeLSTM, TextOnly], ids=lambda c: c.__name__)
def test_logits_do_not_depend_on_the_batch_padding(model_class, batch):
    torch.manual_seed(0)
    model = model_class().eval()
    shortest = int(batch.fixation_mask.sum(dim=1).argmin())
    alone = ReadingBatch(**{name: (value[shortest:shortest + 1] if isinstance(value, torch.Tensor)
                                   else value[shortest:shortest + 1]) for name, value in vars(batch).items()})
    n_fix, n_tok = int(alone.fixation_mask.sum()), int(alone.attention_mask.sum())
    alone.fixation_features, alone.fixation_mask = alone.fixation_features[:, :n_fix], alone.fixation_mask[:, :n_fix]
    for name in ("fixation_word_index", "fixation_word_category", "fixation_word_is_content"):
        setattr(alone, name, getattr(alone, name)[:, :n_fix])
    for name in ("input_ids", "attention_mask", "token_segment"):
        setattr(alone, name, getattr(alone, name)[:, :n_tok])
    with torch.no_grad():
        torch.testing.assert_close(model(alone)[0], model(batch)[shortest], atol=1e-5, rtol=1e-4)


def test_span_mean_is_the_mean_over_the_word_tokens_of_a_shared_or_per_trial_table():
    from readgaze.models.roberteye_f import span_mean

    table = torch.randn(10, 4)
    start, end = torch.tensor([[0, 2, 5]]), torch.tensor([[1, 5, 6]])
    expected = torch.stack([table[s:e].mean(dim=0) for s, e in zip(start[0].tolist(), end[0].tolist())])[None]
    torch.testing.assert_close(span_mean(table, start, end), expected)
    per_trial = torch.randn(2, 10, 4)  # (B, T, D): each trial's own rows
    start, end = torch.tensor([[1, 3], [0, 7]]), torch.tensor([[3, 4], [2, 10]])
    expected = torch.stack([torch.stack([per_trial[b, s:e].mean(dim=0) for s, e in zip(start[b].tolist(),
                                                                                         end[b].tolist())])
                            for b in range(2)])
    torch.testing.assert_close(span_mean(per_trial, start, end), expected)


def test_gaze_word_embedding_adds_the_fixated_words_embedding_and_nothing_off_text(batch):
    """With ``gaze_word_embedding`` a fixation's vector changes with its word's tokens, an off-text one does not."""
    torch.manual_seed(0)
    model = RoBERTEyeF(gaze_word_embedding=True).eval()
    captured = []
    hook = model.encoder.register_forward_pre_hook(lambda m, a, k: captured.append(k["inputs_embeds"]),
                                                   with_kwargs=True)
    on_text = batch.fixation_word_index >= 0
    b, i = [int(x) for x in torch.nonzero(on_text)[0]]
    off = [int(x) for x in torch.nonzero(~on_text & batch.fixation_mask)[0]]
    start, end = batch.fixation_token_band(window=0)
    changed = batch.input_ids.clone()
    changed[b, start[b, i]:end[b, i]] = (changed[b, start[b, i]:end[b, i]] + 1) % model.encoder.config.vocab_size
    with torch.no_grad():
        model(batch), model(ReadingBatch(**{**vars(batch), "input_ids": changed}))
        model.gaze_word_embedding = False
        model(batch)
    hook.remove()
    n_text = batch.input_ids.shape[1] + 1  # text tokens and <eye>, then the gaze slots
    word, plain = captured[0][:, n_text:], captured[2][:, n_text:]
    words = model.encoder.embeddings.word_embeddings(batch.input_ids[b, start[b, i]:end[b, i]]).mean(dim=0)
    torch.testing.assert_close(word[b, i] - plain[b, i], words)
    torch.testing.assert_close(word[off[0], off[1]], plain[off[0], off[1]])
    assert not torch.allclose(captured[1][b, n_text + i], word[b, i])

