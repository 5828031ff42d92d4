/// A node's `unless` link (`CancelToken._add`), as the node sees it.
///
/// One word: the empty cases take values an `_UnlessNode` reference never
/// has.
@usableFromInline
enum _UnlessLink {
    /// No link was ever made: nothing but the node's own token and its
    /// registration can remove it.
    case none
    /// The link, registered on the `unless` token (or about to be), which
    /// the node removes when it settles.
    case linked(_UnlessNode)
    /// The link was removed or dropped. It may still hold a registration
    /// that calls `cf_node_remove` on the node (a cancel of `unless` racing
    /// the run), so the node is never registered again.
    case released

    /// The owner of the `unless` token while linked.
    var unlessOwner: AnyObject? {
        if case .linked(let link) = self { return link.unlessOwner }
        return nil
    }
}
