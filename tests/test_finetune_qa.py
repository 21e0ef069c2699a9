"""QA featurisation, decoding and head (finetune/qa/qa_tasks.py)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.tasks import qa, qa_decoding
from electra_tf2.layers import task_heads as heads
from electra_tf2.text import windows
from tests.fixtures import make_config, make_tasks

CONTEXT = "The leader was John Smith (1895-1943). He was born in Paris."
QUESTION = "What year was John Smith born?"
# whitespace words: The leader was John Smith (1895-1943). He was born in Paris.
# wordpieces (index): the0 leader1 was2 john3 smith4 (5 1895_6 -7 1943_8 )9 .10 he11 was12
#                     born13 in14 paris15 .16
# question: what year was john smith born ? (7) -> doc offset 9, 18 - 7 - 3 = 8 doc tokens
# per window, stride 4: windows start at 0, 4, 8, 12 (lengths 8, 8, 8, 5)


def qa_setup(tmp_path, name="squadv1", **hparams):
  values = dict(max_seq_length=18, max_query_length=8, doc_stride=4, beam_size=3, n_best_size=20)
  values.update(hparams)
  config = make_config(str(tmp_path), [name], **values)
  task, = make_tasks(config)
  return config, task


def make_example(task, answer="1895", start=27, impossible=False, split="train"):
  examples = []
  qa_entry = {"id": "q", "question": QUESTION, "answers": [{"text": answer, "answer_start": start}]}
  if task.v2:
    qa_entry["is_impossible"] = impossible
  task._add_examples(examples, [0], {"context": CONTEXT, "qas": [qa_entry]}, split, "mem")
  task.prepare(examples)
  return examples[0]


def test_context_split_and_word_positions(tmp_path):
  words, offsets = windows.split_context("a  b\u202fc\nd")
  assert words == ["a", "b", "c", "d"]
  assert offsets == [0, 0, 0, 1, 1, 2, 2, 3]
  _, task = qa_setup(tmp_path)
  example = make_example(task)
  assert (example.start_position, example.end_position) == (5, 5)  # "(1895-1943)."


def test_windows_labels_and_max_context(tmp_path):
  config, task = qa_setup(tmp_path)
  example = make_example(task)
  features = task.featurize(example, True, for_eval=True)
  assert [f["squadv1_eid"] for f in features] == [0, 1, 2, 3]
  starts = [(f["squadv1_start_positions"], f["squadv1_end_positions"]) for f in features]
  # tok 6 ("1895", refined from the word span 5..10) is at 6 - start + 9 in windows 0 and 1
  assert starts == [(15, 15), (11, 11), (0, 0), (0, 0)]
  w1 = features[1]
  assert w1["squadv1_tokens"] == ["[CLS]", "what", "year", "was", "john", "smith", "born", "?",
                                  "[SEP]", "smith", "(", "1895", "-", "1943", ")", ".", "he",
                                  "[SEP]"]
  assert w1["segment_ids"] == [0] * 9 + [1] * 9 and w1["input_mask"] == [1] * 18
  assert w1["squadv1_token_to_orig_map"] == {9: 4, 10: 5, 11: 5, 12: 5, 13: 5, 14: 5, 15: 5,
                                             16: 6}
  # "1895" (tok 6): window 0 leaves it 1 token of right context, window 1 two on each side
  assert not features[0]["squadv1_token_is_max_context"][15]
  assert w1["squadv1_token_is_max_context"][11]
  assert features[3]["input_ids"][-3:] == [0, 0, 0]  # 5 doc tokens: padded
  assert all(f["squadv1_is_impossible"] == 0 for f in features)


def test_improve_answer_span_and_impossible_questions(tmp_path):
  _, task = qa_setup(tmp_path, name="squad", max_seq_length=40)
  example = make_example(task, answer="", start=0, impossible=True)
  assert (example.start_position, example.orig_answer_text) == (-1, "")
  feature, = task.featurize(example, True)
  assert (feature["squad_start_positions"], feature["squad_end_positions"],
          feature["squad_is_impossible"]) == (0, 0, 1)
  example = make_example(task, answer="1943", start=32)
  feature, = task.featurize(example, True)
  tokens = ["[CLS]"] + "what year was john smith born ? [SEP]".split()
  assert feature["squad_start_positions"] == feature["squad_end_positions"] == len(tokens) + 8
  assert qa.improve_answer_span(["a", "(", "1895", ")"], 1, 3, task._tokenizer, "1895") == (2, 2)
  assert qa.improve_answer_span(["a", "b"], 0, 1, task._tokenizer, "cat") == (0, 1)


def test_eval_features_have_no_labels(tmp_path):
  _, task = qa_setup(tmp_path)
  example = make_example(task, split="dev")
  assert example.start_position is None
  feature = task.featurize(example, False)[0]
  assert "squadv1_start_positions" not in feature


@pytest.mark.parametrize("pred,orig,want", [
    ("steve smith", "Steve Smith's", "Steve Smith"),
    ("1895", "(1895-1943).", "1895"),
    ("1895 - 1943", "(1895-1943).", "1895-1943"),
    ("cafe", "Café!", "Café"),
    ("paris", "Paris.", "Paris"),
    ("london", "Paris.", "Paris."),  # not found: the original text
])
def test_get_final_text(pred, orig, want):
  assert qa_decoding.get_final_text(pred, orig, do_lower_case=True) == want


def results_for(windows):
  """eid -> outputs with the given joint-beam tops, everything else zero."""
  results = {}
  for eid, (starts, start_lp, ends, end_lp, answerable) in enumerate(windows):
    results[eid] = {"start_top_index": np.array(starts), "start_top_log_probs": np.array(start_lp),
                    "end_top_index": np.array(ends), "end_top_log_probs": np.array(end_lp),
                    "answerable_logit": np.float32(answerable),
                    "start_logits": np.zeros(18), "end_logits": np.zeros(18)}
  return results


NONE = ([0, 0, 0], [0.0] * 3, [[0] * 3] * 3, [[0.0] * 3] * 3)
WINDOWS = [
    # window 0: start 15 ("1895") and 16 ("-") are not max-context here; 9 ("the") is
    ([15, 16, 9], [-0.01, -0.02, -0.05], [[15, 15, 15], [16, 16, 16], [9, 10, 17]],
     [[-0.1] * 3, [-0.1] * 3, [-0.01, -2.0, -0.1]], 0.7),
    # window 1: "1895" -> "1895", "1895 - 1943"; start 0 dropped; "1943" -> "1943", "1943 ) ."
    ([11, 0, 13], [-0.1, -0.5, -1.0], [[11, 13, 10], [5, 5, 5], [13, 15, 11]],
     [[-0.2, -0.3, -0.4], [-0.1] * 3, [-0.1, -0.2, -0.3]], -0.4),
    NONE + (1.2,), NONE + (3.0,)]


def test_decoding_n_best_order_and_filters(tmp_path):
  config, task = qa_setup(tmp_path, name="squad")
  example = make_example(task, split="dev")
  features = task.featurize(example, False, for_eval=True)
  nbest, score_null = qa_decoding.decode_example(example, features, results_for(WINDOWS),
                                                 "squad", config, v2=True)
  got = [(p.text, round(p.score, 6)) for p in nbest]
  assert got == [("The", -0.06), ("1895", -0.3), ("1895-1943", -0.4), ("1943", -1.1),
                 ("1943).", -1.2), ("The leader", -2.05)]
  assert score_null == pytest.approx(-0.4)  # min answerable logit over windows
  text, odds = qa_decoding.best_prediction(nbest, score_null, answerable_classifier=True)
  assert (text, odds) == ("The", pytest.approx(-0.4))
  probs = [p["probability"] for p in qa_decoding.nbest_json(nbest)]
  assert probs == sorted(probs, reverse=True) and sum(probs) == pytest.approx(1.0)
  # max_answer_length 2 drops the 3-token spans; n_best_size cuts the list
  short = config.replace(max_answer_length=2, n_best_size=3)
  nbest, _ = qa_decoding.decode_example(example, features, results_for(WINDOWS), "squad", short,
                                        v2=True)
  assert [p.text for p in nbest] == ["The", "1895", "1943"]


def test_decoding_without_joint_prediction_or_classifier(tmp_path):
  config, task = qa_setup(tmp_path, name="squad", joint_prediction=False, n_best_size=2,
                          answerable_classifier=False)
  example = make_example(task, split="dev")
  features = task.featurize(example, False, for_eval=True)
  results = {}
  for eid in range(4):
    start, end = np.full(18, -5.0), np.full(18, -5.0)
    start[0], end[0] = 1.0 + eid, 0.5
    results[eid] = {"start_logits": start, "end_logits": end, "answerable_logit": 0.0}
  start, end = results[1]["start_logits"], results[1]["end_logits"]
  start[11], end[13] = 3.0, 2.0  # "1895-1943", score 5
  nbest, score_null = qa_decoding.decode_example(example, features, results, "squad", config,
                                                 v2=True)
  assert nbest[0].text == "1895-1943" and nbest[0].score == 5.0
  assert score_null == 1.5  # min over windows of start[0] + end[0]
  text, odds = qa_decoding.best_prediction(nbest, score_null, answerable_classifier=False)
  assert (text, odds) == ("1895-1943", -3.5)


def test_no_valid_candidate_gives_empty(tmp_path):
  config, task = qa_setup(tmp_path)
  example = make_example(task, split="dev")
  features = task.featurize(example, False, for_eval=True)
  nbest, score_null = qa_decoding.decode_example(example, features,
                                                 results_for([NONE + (0.0,)] * 4), "squadv1",
                                                 config, v2=False)
  assert [p.text for p in nbest] == ["empty"] and score_null is None


# ---------------------------------------------------------------------------
# Head
# ---------------------------------------------------------------------------


def head_inputs(batch=2, length=10, hidden=8, seed=0):
  rng = np.random.default_rng(seed)
  states = tf.constant(rng.normal(size=(batch, length, hidden)), tf.float32)
  input_mask = np.ones((batch, length), np.int32)
  input_mask[1, 8:] = 0
  segment_ids = np.zeros((batch, length), np.int32)
  segment_ids[:, 4:] = 1
  segment_ids[1, 8:] = 0
  return states, {"input_mask": tf.constant(input_mask), "segment_ids": tf.constant(segment_ids)}


def test_head_variables_have_the_official_names_and_shapes():
  def layout(**kwargs):
    head = heads.QAHead("squad", beam_size=3, **kwargs)
    head.build((None, None, 8))
    return [(l.name, tuple(l.kernel.shape)) for l in head.official_layers]
  assert layout() == [("dense", (8, 1)), ("qa_hidden", (16, 512)), ("dense_1", (512, 1)),
                      ("dense_2", (16, 512)), ("dense_3", (512, 1))]
  assert layout(joint_prediction=False) == [("dense", (8, 1)), ("dense_1", (8, 1)),
                                            ("dense_2", (16, 512)), ("dense_3", (512, 1))]
  assert layout(answerable_uses_start_logits=False) == [
      ("dense", (8, 1)), ("qa_hidden", (16, 512)), ("dense_1", (512, 1)), ("dense_2", (8, 1))]


def test_head_masks_and_beam_matches_teacher_forcing():
  tf.keras.utils.set_random_seed(1)
  head = heads.QAHead("squad", beam_size=3)
  states, features = head_inputs()
  head.build(states.shape)
  out = head(states, features, training=False)
  raw = tf.squeeze(head.start_dense(states), -1).numpy()
  allowed = np.array([[1, 0, 0, 0, 1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1, 0, 0]])
  np.testing.assert_allclose(out["start_logits"].numpy() - raw, 1000.0 * (allowed - 1), atol=1e-3)
  assert out["end_top_index"].shape == (2, 3, 3) and out["end_logits"].numpy().max() == 0.0
  top = out["start_top_index"].numpy()
  assert np.all(allowed[np.arange(2)[:, None], top] == 1)
  # the beam's end distribution for start s is the teacher-forced one with gold start s
  for beam in range(3):
    forced = head(states, dict(features, squad_start_positions=tf.constant(top[:, beam])),
                  training=True)
    log_probs = tf.nn.log_softmax(forced["end_logits"]).numpy()
    want_lp, want_index = tf.nn.top_k(log_probs, 3)
    np.testing.assert_allclose(out["end_top_log_probs"].numpy()[:, beam], want_lp, atol=1e-4)
    np.testing.assert_array_equal(out["end_top_index"].numpy()[:, beam], want_index)


def test_head_end_layer_equals_the_concatenation():
  head = heads.QAHead("squad", beam_size=2)
  states, _ = head_inputs()
  head.build(states.shape)
  start = states[:, :2]
  concat = tf.concat([tf.tile(start[:, :, None], [1, 1, 10, 1]),
                      tf.tile(states[:, None], [1, 2, 1, 1])], -1)
  np.testing.assert_allclose(head._end_hidden(start, states).numpy(),
                             head.qa_hidden(concat).numpy(), atol=1e-5)


def test_answerable_logit_sees_cls_and_the_start_weighted_states():
  head = heads.QAHead("squad", beam_size=2)
  states, features = head_inputs()
  head.build(states.shape)
  out = head(states, features, training=False)
  p = tf.nn.softmax(out["start_logits"]).numpy()
  reprs = np.concatenate([states.numpy()[:, 0], np.einsum("bl,blh->bh", p, states.numpy())], -1)
  w2, b2 = head.answerable_hidden.kernel.numpy(), head.answerable_hidden.bias.numpy()
  w3, b3 = head.answerable_dense.kernel.numpy(), head.answerable_dense.bias.numpy()
  hidden = tf.nn.gelu(reprs @ w2 + b2, approximate=False).numpy()
  np.testing.assert_allclose(out["answerable_logit"].numpy(), (hidden @ w3 + b3)[:, 0],
                             rtol=1e-4, atol=1e-5)


def test_head_loss():
  head = heads.QAHead("squad", beam_size=2)
  states, features = head_inputs()
  head.build(states.shape)
  labels = dict(features, squad_start_positions=tf.constant([5, 0]),
                squad_end_positions=tf.constant([6, 0]), squad_is_impossible=tf.constant([0, 1]))
  out = head(states, labels, training=True)
  loss = head.loss(out, labels).numpy()
  start_ce = -tf.nn.log_softmax(out["start_logits"]).numpy()[[0, 1], [5, 0]]
  end_ce = -tf.nn.log_softmax(out["end_logits"]).numpy()[[0, 1], [6, 0]]
  logit = out["answerable_logit"].numpy()
  bce = np.log1p(np.exp(-np.where([0, 1], logit, -logit)))
  np.testing.assert_allclose(loss, (start_ce + end_ce) / 2 + 0.5 * bce, rtol=1e-5)
