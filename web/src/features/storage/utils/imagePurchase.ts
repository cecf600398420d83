import { PAGE, SIZE_CATEGORIES, type InstanceCategory } from '@console/contract';

/**
 * The purchase page with an image of my images (or one shared with a link) preselected: a GPU
 * instance for images saved from GPU or application instances, the same kind of size otherwise.
 */
export function purchaseWithImage(image: { id: string; category: InstanceCategory }): string {
  const size = (SIZE_CATEGORIES as readonly string[]).includes(image.category);
  const q = new URLSearchParams(size ? { category: image.category, userImageId: image.id } : { userImageId: image.id });
  return `${PAGE.purchase}?${q.toString()}`;
}
