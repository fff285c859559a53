"""HyperLex and BREEDS as the HierarCaps paper probes them (Sec. 6.1, App. B.6; Tables 1, 3, 6, 7).

HyperLex: each word is embedded in the prompt "a picture of a {}"; for a pair (word1, word2), rated
"to what degree is word1 a type of word2", word2 is the general item and the predicted score is
-Xi_r(e_word2, e_word1) (a small exterior angle means entailment, so it is negated for a positive
correlation; the paper does not print the sign). `rho_all`, `rho_n`: Spearman rho with AVG_SCORE over
all pairs and over nouns.

BREEDS: for each superclass split (`<root>/<subset>.json`, e.g. living17, nonliving26, entity13,
entity30) the candidate labels are its superclass names and its subclass names (candidates are not
pooled across subsets); a test item is an ImageNet image of one of its subclasses (the classification
set `imagenet`, labels = BREEDS class numbers), whose truth is the ordered pair (superclass, subclass).
Each label is embedded with "the prompt ensemble of Radford et al." (CLIP's 80 ImageNet templates, the
catalog's prompt set `clip_imagenet_80`); c_x is the method's image-label similarity. Candidates are all
ordered pairs of distinct labels (x, y) with x closer to the root. The paper prints the pair score
c_x + c_y + C * Xi_r(x, y) with C in [0, 0.2], which rewards pairs that are *not* entailed (a small Xi
means y lies along the ray from the root through x); both readings are computed: `r1`, `r5` score
c_x + c_y - C * Xi (our default), `r1_plus_xi`, `r5_plus_xi` the printed + C * Xi. C is chosen among 20
equally spaced values in [0, 0.2] by 2-fold cross-validation (App. B.6: "two equally-sized folds" of the
test items; `breeds_folds`, a seeded random split of each subset's items, since the test set is stored class
by class and its halves would nearly split the classes), separately for R@1 and R@5, and the two folds'
held-out recalls are averaged. Recalls are fractions; each aggregate is the unweighted mean over subsets
(the paper does not say how subsets are combined); `<subset>_r1`, `<subset>_r5` per subset (default sign).

BREEDS single-prompt baselines (App. C.7, Table 7; task `breeds_prompt_<key>` per prompt of
`hypvl.tasks.BREEDS_SINGLE_PROMPTS`): the same subsets, labels and items; every ordered pair of distinct
labels (x general, y specific) fills the two-slot prompt, y first ("a banjo of type stringed instrument"),
and an item's pairs rank by its image's similarity to the filled prompt; r1, r5 as above, no C to fit.
The paper does not restrict the pairs ("the pair of distinct labels"), so all L(L-1) are candidates.
"""

from pathlib import Path

import numpy as np
import torch

from hypvl.data.formats.classification_split import read_classification_split
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics.checks import check_finite
from hypvl.evaluate.metrics.hierarcaps import spearman_rho
from hypvl.evaluate.radial import entailment_root, exterior_angles, pairwise_exterior_angles, radii
from hypvl.evaluate.zeroshot import class_embeddings
from hypvl.tasks import BREEDS_SINGLE_PROMPTS

HYPERLEX_PROMPT = "a picture of a {}"
BREEDS_COSTS = tuple(np.linspace(0.0, 0.2, 20).tolist())
BREEDS_KS = (1, 5)
BREEDS_PROMPTS = "clip_imagenet_80"
BREEDS_SIGNS = {"": -1.0, "_plus_xi": 1.0}  # metric suffix -> sign of C * Xi in the pair score
BREEDS_FOLD_SEED = 0
SINGLE_PROMPT_TASK = "breeds_prompt_"  # + a key of BREEDS_SINGLE_PROMPTS


@torch.no_grad()
def evaluate_hyperlex(ctx: EvalContext, path: Path) -> TaskResult:
    """rho_all and rho_n; n_samples = pairs."""
    from hypvl.data.formats.hyperlex import read_hyperlex

    pairs = read_hyperlex(path)
    if not pairs:
        raise InputError(f"{path}: no pairs")
    words = list(dict.fromkeys(w for p in pairs for w in (p.word1, p.word2)))
    index = {w: i for i, w in enumerate(words)}
    embeds = text_embeddings(ctx.model, ctx.tokenizer, [HYPERLEX_PROMPT.format(w) for w in words],
                             ctx.batch_size, "hyperlex")
    root = entailment_root(ctx.model, ctx.tokenizer)
    general = embeds[[index[p.word2] for p in pairs]]
    specific = embeds[[index[p.word1] for p in pairs]]
    predicted = -exterior_angles(ctx.model, general, specific, root)
    truth = torch.tensor([p.score for p in pairs], dtype=torch.float64)
    nouns = torch.tensor([p.pos == "N" for p in pairs])
    if not nouns.any():
        raise InputError(f"{path}: no noun pairs for rho_N")
    metrics = {"rho_all": spearman_rho(predicted, truth), "rho_n": spearman_rho(predicted[nouns], truth[nouns])}
    return TaskResult(metrics, len(pairs))


def hits_at_k(scores: torch.Tensor, truth: torch.Tensor, ks=BREEDS_KS) -> dict[int, torch.Tensor]:
    """(N,) bool per k: candidate `truth` (-1: not a candidate) is among the k best of each row of `scores` (N, P);
    a candidate scoring equal to the true one counts ahead of it (pessimistic ties)."""
    found = truth >= 0
    true_scores = scores.gather(1, truth.clamp(min=0)[:, None])
    ahead = (scores >= true_scores).sum(dim=1) - 1
    return {k: found & (ahead < k) for k in ks}


def pair_hits(image_label_scores: torch.Tensor, angles: torch.Tensor, general: torch.Tensor,
              specific: torch.Tensor, truth: torch.Tensor, cost: float, ks=BREEDS_KS,
              sign: float = -1.0) -> dict[int, torch.Tensor]:
    """(N,) bool per k: the true pair is among the k best candidate pairs (c_x + c_y + sign * cost * Xi).

    image_label_scores: (N, L) c; angles: (L, L) Xi_r(x, y); general, specific: (P,) label indices of the
    candidate pairs; truth: (N,) index of each image's true pair among the candidates, -1 when it is
    not a candidate.
    """
    scores = image_label_scores[:, general] + image_label_scores[:, specific] + sign * cost * angles[general, specific]
    return hits_at_k(scores, truth, ks)


def breeds_folds(count: int, seed: int = BREEDS_FOLD_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """App. B.6's two equally sized folds of `count` test items (the second one item larger for an odd count): a
    random permutation seeded by `seed`, cut in two; each fold's item indices in ascending order."""
    if count < 2:
        raise ValueError("BREEDS cross-validation needs at least two items")
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed))
    return order[:count // 2].sort().values, order[count // 2:].sort().values


def cross_validated_recall(image_label_scores, angles, general, specific, truth,
                           costs=BREEDS_COSTS, ks=BREEDS_KS, sign: float = -1.0) -> dict[int, float]:
    """Recall@k as a fraction: C picked on one fold of the items (`breeds_folds`), scored on the other, both ways,
    averaged."""
    folds = breeds_folds(len(truth))
    per_cost = [pair_hits(image_label_scores, angles, general, specific, truth, c, ks, sign) for c in costs]
    result = {}
    for k in ks:
        held_out = []
        for fit, test in (folds, folds[::-1]):
            best = max(range(len(costs)), key=lambda i: (per_cost[i][k][fit].double().mean().item(), -i))
            held_out.append(per_cost[best][k][test].double().mean().item())
        result[k] = sum(held_out) / 2
    return result


def subset_labels(split_path: Path, hierarchy, labels: torch.Tensor) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """One superclass split's candidate labels (its superclass names, then its subclass names), which ImageNet
    test items belong to it (`keep`, over `labels`), and each kept item's true pair as label indices
    (general, specific), shape (N, 2)."""
    from hypvl.data.formats.breeds import read_breeds_split

    superclasses = read_breeds_split(split_path, hierarchy)
    class_names = {c.index: c.name for c in hierarchy.classes}
    coarse_of = {n: s.label for s in superclasses for n in (*s.source, *s.target)}
    names = list(dict.fromkeys([s.name for s in superclasses] + [class_names[n] for n in sorted(coarse_of)]))
    label_index = {name: i for i, name in enumerate(names)}
    keep = torch.tensor([int(label) in coarse_of for label in labels.tolist()], dtype=torch.bool)
    if not keep.any():
        raise InputError(f"{split_path}: no ImageNet test image belongs to its classes")
    truth = torch.tensor([[label_index[superclasses[coarse_of[n]].name], label_index[class_names[n]]]
                          for n in labels[keep].tolist()])
    return names, keep, truth


@torch.no_grad()
def evaluate_breeds_subset(ctx: EvalContext, split_path: Path, hierarchy, images: torch.Tensor,
                           labels: torch.Tensor, templates: list[str]) -> tuple[dict[str, float], int]:
    """Cross-validated R@1/R@5 per sign reading ({"r1": .., "r5_plus_xi": ..}) on one superclass split;
    `images`/`labels` cover the ImageNet test set."""
    names, keep, true_pairs = subset_labels(split_path, hierarchy, labels)
    model, root = ctx.model, entailment_root(ctx.model, ctx.tokenizer)
    label_embeds = class_embeddings(model, ctx.tokenizer, names, templates, ctx.batch_size, split_path.stem)
    scores = model.similarity(images[keep], label_embeds)
    check_finite(f"{split_path.stem} image-label scores", scores)
    label_radii = radii(model, label_embeds, root)
    angles = pairwise_exterior_angles(model, label_embeds, label_embeds, root)
    general, specific = (label_radii[:, None] < label_radii[None, :]).nonzero(as_tuple=True)
    pair_index = {(g, s): i for i, (g, s) in enumerate(zip(general.tolist(), specific.tolist()))}
    truth = torch.tensor([pair_index.get((g, s), -1) for g, s in true_pairs.tolist()])
    recalls = {f"r{k}{suffix}": value for suffix, sign in BREEDS_SIGNS.items()
               for k, value in cross_validated_recall(scores, angles, general, specific, truth, sign=sign).items()}
    return recalls, int(keep.sum())


@torch.no_grad()
def single_prompt_subset(ctx: EvalContext, split_path: Path, hierarchy, images: torch.Tensor, labels: torch.Tensor,
                         prompt: str) -> tuple[dict[str, float], int]:
    """R@1/R@5 of the single-prompt baseline on one superclass split: every ordered pair of distinct labels
    (general, specific) fills `prompt` as prompt.format(specific, general), and an item's pairs rank by the
    similarity of its image to the filled prompt."""
    names, keep, true_pairs = subset_labels(split_path, hierarchy, labels)
    count = len(names)
    general, specific = (~torch.eye(count, dtype=torch.bool)).nonzero(as_tuple=True)
    texts = [prompt.format(names[s], names[g]) for g, s in zip(general.tolist(), specific.tolist())]
    embeds = text_embeddings(ctx.model, ctx.tokenizer, texts, ctx.batch_size, f"{split_path.stem} prompt pairs")
    # pair (g, s) sits at row-major index g * (count - 1) + s - (s > g) of the off-diagonal pairs
    g, s = true_pairs[:, 0], true_pairs[:, 1]
    truth = g * (count - 1) + s - (s > g).long()
    kept = images[keep]
    hits = {k: [] for k in BREEDS_KS}
    for start in range(0, len(kept), ctx.batch_size):  # (items x pairs) scores a chunk at a time
        scores = ctx.model.similarity(kept[start:start + ctx.batch_size], embeds)
        check_finite(f"{split_path.stem} image-prompt scores", scores)
        for k, found in hits_at_k(scores, truth[start:start + ctx.batch_size]).items():
            hits[k].append(found)
    return {f"r{k}": torch.cat(found).double().mean().item() for k, found in hits.items()}, int(keep.sum())


def breeds_data(ctx: EvalContext, root: Path):
    """(superclass hierarchy, split JSONs, ImageNet test image embeddings, labels): read and embedded once per
    evaluation, for BREEDS and each single-prompt baseline."""
    from hypvl.data.formats.breeds import CLASS_INFO, read_breeds_hierarchy

    def compute():
        hierarchy = read_breeds_hierarchy(root)
        splits = sorted(p for p in Path(root).glob("*.json") if p.name != CLASS_INFO)
        if not splits:
            raise InputError(f"{root}: no superclass split JSONs next to {CLASS_INFO}")
        dataset = read_classification_split(ctx.classification_root("imagenet"),
                                            ctx.config["eval"]["classification_split"])
        images = image_embeddings(ctx.model, dataset.load, len(dataset),
                                  lambda img: ctx.model.eval_view(img, ctx.image_size, "crop"), ctx.batch_size,
                                  "breeds")
        return hierarchy, splits, images, torch.tensor(dataset.labels)

    return ctx.shared(f"breeds {root}", compute)


def over_subsets(ctx: EvalContext, root: Path, score_subset) -> TaskResult:
    """`score_subset(split, hierarchy, images, labels) -> (metrics, items)` on every superclass split: each metric's
    unweighted mean over subsets, and per-subset `<subset>_r1`, `<subset>_r5`; n_samples = items summed."""
    hierarchy, splits, images, labels = breeds_data(ctx, root)
    per_subset, total = [], 0
    for path in splits:
        recall, count = score_subset(path, hierarchy, images, labels)
        per_subset.append(recall)
        total += count
    metrics = {name: sum(r[name] for r in per_subset) / len(per_subset) for name in per_subset[0]}
    metrics |= {f"{path.stem}_r{k}": recall[f"r{k}"] for path, recall in zip(splits, per_subset) for k in BREEDS_KS}
    return TaskResult(metrics, total)


def evaluate_breeds(ctx: EvalContext, root: Path, templates: list[str]) -> TaskResult:
    """r1, r5, r1_plus_xi, r5_plus_xi (means over subsets) and per-subset r1, r5; n_samples = items summed
    over subsets."""
    return over_subsets(ctx, root, lambda path, *data: evaluate_breeds_subset(ctx, path, *data, templates))


def evaluate_single_prompt(ctx: EvalContext, root: Path, prompt: str) -> TaskResult:
    """The single-prompt baseline's r1, r5 (means over subsets) and per-subset r1, r5."""
    return over_subsets(ctx, root, lambda path, *data: single_prompt_subset(ctx, path, *data, prompt))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Tasks `hyperlex`, `breeds` and `breeds_prompt_<key>` (hypvl.tasks.BREEDS_SINGLE_PROMPTS)."""
    if task == "hyperlex":
        return evaluate_hyperlex(ctx, ctx.dataset_path("hyperlex"))
    if task.startswith(SINGLE_PROMPT_TASK):
        return evaluate_single_prompt(ctx, ctx.dataset_path("breeds"),
                                      BREEDS_SINGLE_PROMPTS[task.removeprefix(SINGLE_PROMPT_TASK)])
    from hypvl.data.catalog import load_prompt_set

    return evaluate_breeds(ctx, ctx.dataset_path("breeds"), list(load_prompt_set(BREEDS_PROMPTS)))
