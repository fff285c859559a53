"""Zero-shot image-text retrieval (MERU Table 1, HyCoCLIP Table 2): COCO val2017 and Flickr30K Karpathy test.

Images are squeezed to the input size (resized ignoring the aspect ratio, as MERU does); every caption
of the set is a candidate. t2i: each caption queries the images, its one image is the positive; i2t:
each image queries the captions, any of its captions counts. Scores are the method's own similarity
(cosine, or negative Lorentzian distance), computed a block of queries at a time and reduced with
batched top-K, so a 5k x 25k set never holds more than one (block, N) score block.
"""

from collections.abc import Sequence

import torch

from hypvl.data.formats.common import CaptionedImage
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import squeeze
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics import recall_at_k

KS = (1, 5, 10)
QUERY_BLOCK = 1024


def _recall_in_blocks(similarity, queries: torch.Tensor, items: torch.Tensor, positives: list[list[int]],
                      images_are_queries: bool) -> dict[int, float]:
    """recall_at_k over query blocks of QUERY_BLOCK rows; hits are summed exactly across blocks."""
    hits = dict.fromkeys(KS, 0)
    for start in range(0, len(queries), QUERY_BLOCK):
        block = queries[start:start + QUERY_BLOCK]
        scores = similarity(block, items) if images_are_queries else similarity(items, block).T
        recalls = recall_at_k(scores, positives[start:start + QUERY_BLOCK], KS)
        for k in KS:
            hits[k] += round(recalls[k] * len(block) / 100.0)
    return {k: 100.0 * hits[k] / len(queries) for k in KS}


@torch.no_grad()
def evaluate_retrieval(model, tokenizer, items: Sequence[CaptionedImage], image_size: int, batch_size: int,
                       name: str) -> TaskResult:
    """t2i_r{1,5,10} and i2t_r{1,5,10} in percent; n_samples = number of images."""
    captions = [caption for item in items for caption in item.captions]
    owner = [index for index, item in enumerate(items) for _ in item.captions]
    images = image_embeddings(model, lambda i: load_image(items[i].image), len(items),
                              lambda img: squeeze(img, image_size), batch_size, name)
    texts = text_embeddings(model, tokenizer, captions, batch_size, name)
    caption_ids: list[list[int]] = [[] for _ in items]
    for text_index, image_index in enumerate(owner):
        caption_ids[image_index].append(text_index)
    t2i = _recall_in_blocks(model.similarity, texts, images, [[i] for i in owner], images_are_queries=False)
    i2t = _recall_in_blocks(model.similarity, images, texts, caption_ids, images_are_queries=True)
    metrics = {f"t2i_r{k}": t2i[k] for k in KS} | {f"i2t_r{k}": i2t[k] for k in KS}
    return TaskResult(metrics, len(items))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Tasks `ret_coco` (captions_val2017.json) and `ret_flickr30k` (Karpathy test split)."""
    if task == "ret_coco":
        from hypvl.data.formats.coco_captions import read_coco_captions

        items = read_coco_captions(ctx.dataset_path("coco_captions"))
    else:
        from hypvl.data.formats.flickr30k import read_flickr30k

        items = read_flickr30k(ctx.dataset_path("flickr30k"), split="test")
    return evaluate_retrieval(ctx.model, ctx.tokenizer, items, ctx.image_size, ctx.batch_size, task)
