/** An array that counts the calls of its `includes` (a list the code under test must not search). */
export class Counted<T> extends Array<T> {
  searches = 0;
  static holding<T>(items: readonly T[]): Counted<T> {
    const list = new Counted<T>();
    list.push(...items);
    return list;
  }
  override includes(item: T): boolean {
    this.searches++;
    return super.includes(item);
  }
}
